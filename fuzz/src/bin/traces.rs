//! AFL target: see [`ftlsim_fuzz::traces`].

fn main() {
    afl::fuzz!(|data: &[u8]| ftlsim_fuzz::traces(data));
}
