//! Large tables (forward maps, OOB arrays) allocated on transparent huge
//! pages where the OS offers them: the simulator's hot loops index them at
//! random, and with 4 KiB pages nearly every such access also misses the TLB.

/// A large table (forward map, OOB array): a `Vec` backed by huge pages
/// when possible, also when a snapshot is loaded. Serialized as a sequence
/// of byte strings of up to [`CHUNK_BYTES`], each element [`Flat`]'s
/// fixed-width little-endian bytes: decoding element by element through
/// serde cost ~40 instructions an element, most of a snapshot's load
/// (bincode reads a byte string with one copy into a buffer it reuses).
/// Loaded in place (`Deserialize::deserialize_in_place`, what
/// [`crate::snapshot`] does) it keeps its memory: a loaded 1 TiB drive then
/// holds its tables once, not the fresh drive's and the snapshot's both.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// An element of a [`BigVec`] as snapshots store it: `BYTES` bytes,
/// little-endian.
pub trait Flat: Copy {
    const BYTES: usize;
    fn put(self, out: &mut [u8]);
    fn get(bytes: &[u8]) -> Self;

    /// `chunk`'s stored bytes, encoded into `buf`.
    fn encode<'a>(chunk: &'a [Self], buf: &'a mut Vec<u8>) -> &'a [u8] {
        buf.resize(chunk.len() * Self::BYTES, 0);
        for (&x, out) in chunk.iter().zip(buf.chunks_exact_mut(Self::BYTES)) {
            x.put(out);
        }
        buf
    }

    /// Decodes `bytes` (`out.len()` elements) over `out`.
    fn decode(bytes: &[u8], out: &mut [Self]) {
        for (x, b) in out.iter_mut().zip(bytes.chunks_exact(Self::BYTES)) {
            *x = Self::get(b);
        }
    }
}

macro_rules! flat_int {
    ($($t:ty),*) => {$(
        impl Flat for $t {
            const BYTES: usize = size_of::<$t>();
            #[inline(always)]
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn get(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("a chunk of BYTES"))
            }
            // Little-endian memory is the stored form: no copy to save
            // (bincode's size pass then costs nothing), one to load.
            #[cfg(target_endian = "little")]
            fn encode<'a>(chunk: &'a [$t], _buf: &'a mut Vec<u8>) -> &'a [u8] {
                bytemuck::cast_slice(chunk)
            }
            #[cfg(target_endian = "little")]
            fn decode(bytes: &[u8], out: &mut [$t]) {
                bytemuck::cast_slice_mut(out).copy_from_slice(bytes);
            }
        }
    )*};
}
flat_int!(u32, u64);

/// The largest byte string a [`BigVec`] is stored in: the buffer a load
/// reads into (and a save encodes into) besides the table itself.
pub const CHUNK_BYTES: usize = 1 << 20;

impl<T: Flat> serde::Serialize for BigVec<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        struct Bytes<'a>(&'a [u8]);
        impl serde::Serialize for Bytes<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        let per = CHUNK_BYTES / T::BYTES;
        let mut seq = s.serialize_seq(Some(self.0.len().div_ceil(per)))?;
        let mut buf = Vec::new();
        for chunk in self.0.chunks(per) {
            seq.serialize_element(&Bytes(T::encode(chunk, &mut buf)))?;
        }
        seq.end()
    }
}

impl<'de, T: Flat> serde::Deserialize<'de> for BigVec<T> {
    /// An ordinary `Vec`: no drive is decoded whole (snapshots load in
    /// place, over tables [`big_vec`] allocated; a test checks every FTL).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BigVec<T>, D::Error> {
        #[cfg(test)]
        DECODED_WHOLE.with(|n| n.set(n.get() + 1));
        let mut v = BigVec(Vec::new());
        d.deserialize_seq(Chunks { place: &mut v.0 })?;
        Ok(v)
    }

    /// Over the table's own elements (same length: same config), in its
    /// huge pages.
    fn deserialize_in_place<D: serde::Deserializer<'de>>(d: D, place: &mut BigVec<T>) -> Result<(), D::Error> {
        d.deserialize_seq(Chunks { place: &mut place.0 })
    }
}

/// Decodes a [`BigVec`]'s chunks over `place`, which ends as long as they
/// are.
struct Chunks<'a, T> {
    place: &'a mut Vec<T>,
}

impl<'de, T: Flat> serde::de::Visitor<'de> for Chunks<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a table as byte strings of {}-byte elements", T::BYTES)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut at = 0;
        while seq.next_element_seed(Chunk { place: &mut *self.place, at: &mut at })?.is_some() {}
        self.place.truncate(at);
        Ok(())
    }
}

/// One chunk of a [`BigVec`], decoded from element `at` of `place` on.
struct Chunk<'a, T> {
    place: &'a mut Vec<T>,
    at: &'a mut usize,
}

impl<'de, T: Flat> serde::de::DeserializeSeed<'de> for Chunk<'_, T> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de, T: Flat> serde::de::Visitor<'de> for Chunk<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a byte string of {}-byte elements", T::BYTES)
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<(), E> {
        if v.len() % T::BYTES != 0 {
            return Err(E::invalid_length(v.len(), &self));
        }
        let at = *self.at;
        let fit = (v.len() / T::BYTES).min(self.place.len().saturating_sub(at));
        let (over, beyond) = v.split_at(fit * T::BYTES);
        T::decode(over, &mut self.place[at..at + fit]);
        self.place.extend(beyond.chunks_exact(T::BYTES).map(T::get));
        *self.at += v.len() / T::BYTES;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn options() -> impl bincode::Options {
        use bincode::Options;
        bincode::options().with_fixint_encoding()
    }

    fn encode<T: Flat>(v: &BigVec<T>) -> Vec<u8> {
        use bincode::Options;
        options().serialize(v).unwrap()
    }

    /// Decodes `bytes` over `place`, as a snapshot's load does.
    fn decode_over<T: Flat>(bytes: &[u8], place: &mut BigVec<T>) -> bincode::Result<()> {
        let mut d = bincode::Deserializer::with_reader(bytes, options());
        BigVec::deserialize_in_place(&mut d, place)
    }

    fn round_trips<T: Flat + PartialEq + std::fmt::Debug>(make: impl Fn(usize) -> T, fill: T) {
        let per = CHUNK_BYTES / T::BYTES;
        for n in [0, 1, per - 1, per, per + 1, 2 * per + 3] {
            let v = BigVec((0..n).map(&make).collect::<Vec<T>>());
            let bytes = encode(&v);
            // Each chunk's byte string its length (u64) and the elements:
            // the count (u64) of chunks before them.
            assert_eq!(bytes.len(), 8 + n.div_ceil(per) * 8 + n * T::BYTES, "{n}");
            for place_len in [n, n / 2, n + 5] {
                let mut place = big_vec(place_len, fill);
                decode_over(&bytes, &mut place).unwrap();
                assert_eq!(place, v, "{n} elements over {place_len}");
            }
            let whole: BigVec<T> = bincode::Options::deserialize(options(), &bytes).unwrap();
            assert_eq!(whole, v);
        }
    }

    #[test]
    fn big_vecs_round_trip_across_chunks_over_any_length() {
        round_trips(|i| (i as u32).wrapping_mul(2_654_435_761), u32::MAX);
        round_trips(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15), 7u64);
    }

    #[test]
    fn big_vecs_are_stored_little_endian() {
        let bytes = encode(&BigVec(vec![0x0102_0304u32, 5]));
        let mut want = vec![1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0];
        want.extend([4, 3, 2, 1, 5, 0, 0, 0]);
        assert_eq!(bytes, want);
    }

    #[test]
    fn a_chunk_not_whole_elements_is_an_error() {
        // One chunk of 6 bytes: one u32 and half of another.
        let mut bytes = vec![1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0];
        bytes.extend([1, 0, 0, 0, 2, 0]);
        let err = decode_over(&bytes, &mut big_vec(2, 0u32)).unwrap_err().to_string();
        assert!(err.contains("invalid length 6") && err.contains("4-byte elements"), "{err}");
        // Cut short: an error, not a panic.
        let bytes = encode(&BigVec(vec![1u32, 2, 3]));
        assert!(decode_over(&bytes[..bytes.len() - 1], &mut big_vec(3, 0u32)).is_err());
    }
}
