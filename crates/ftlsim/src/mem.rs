//! Large tables (forward maps, OOB arrays) allocated on transparent huge
//! pages where the OS offers them: the simulator's hot loops index them at
//! random, and with 4 KiB pages nearly every such access also misses the TLB.

/// A large table (forward map, OOB array): a `Vec` backed by huge pages
/// when possible, also when a snapshot is loaded. Serialized as a `Vec`.
/// Loaded in place (`Deserialize::deserialize_in_place`, what
/// [`crate::snapshot`] does) it keeps its memory: a loaded 1 TiB drive then
/// holds its tables once, not the fresh drive's and the snapshot's both.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct BigVec<T>(Vec<T>);

impl<T> std::ops::Deref for BigVec<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> std::ops::DerefMut for BigVec<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

#[cfg(test)]
thread_local! {
    /// Tables this thread decoded whole (not in place), for tests.
    pub(crate) static DECODED_WHOLE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A vector of `n` copies of `value`, backed by huge pages when possible.
pub fn big_vec<T: Copy>(n: usize, value: T) -> BigVec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.resize(n, value);
    BigVec(v)
}

impl<'de, T: Copy + serde::Deserialize<'de>> serde::Deserialize<'de> for BigVec<T> {
    /// An ordinary `Vec`: no drive is decoded whole (snapshots load in
    /// place, over tables [`big_vec`] allocated; a test checks every FTL).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BigVec<T>, D::Error> {
        #[cfg(test)]
        DECODED_WHOLE.with(|n| n.set(n.get() + 1));
        Vec::deserialize(d).map(BigVec)
    }

    /// Over the table's own elements (same length: same config), in its
    /// huge pages.
    fn deserialize_in_place<D: serde::Deserializer<'de>>(d: D, place: &mut BigVec<T>) -> Result<(), D::Error> {
        Vec::deserialize_in_place(d, &mut place.0)
    }
}

#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 4 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside an allocation this process owns;
        // madvise only changes how the kernel backs it, never its contents.
        // Failure (no THP support) is harmless, so the result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_ptr: *mut u8, _len: usize) {}

/// Hints the CPU to start loading `slice[i]` into cache, so a lookup a
/// little later does not stall on memory. Out-of-range indexes are ignored;
/// a prefetch never faults and changes no value, so results are unaffected.
#[inline]
pub fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i) {
        // SAFETY: PREFETCHT0 only hints the cache; the pointer is valid anyway.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// As [`prefetch`], every cache line of `slice[i]` (for elements wider
/// than a line, whose fields may straddle two).
#[inline]
pub fn prefetch_all<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i) {
        let p = (x as *const T).cast::<i8>();
        for offset in (0..size_of::<T>()).step_by(64).chain([size_of::<T>().saturating_sub(1)]) {
            // SAFETY: as in `prefetch`; the address lies inside `slice[i]`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.wrapping_add(offset)) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// Two distinct elements of `slice`, mutably (`get_disjoint_mut` is newer
/// than the crate's minimum Rust).
pub fn two_mut<T>(slice: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b, "two elements, not one");
    if a < b {
        let (l, r) = slice.split_at_mut(b);
        (&mut l[a], &mut r[0])
    } else {
        let (l, r) = slice.split_at_mut(a);
        (&mut r[0], &mut l[b])
    }
}
