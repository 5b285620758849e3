//! AFL target: see [`ftlsim_fuzz::nbd`].

fn main() {
    afl::fuzz!(|data: &[u8]| ftlsim_fuzz::nbd(data));
}
