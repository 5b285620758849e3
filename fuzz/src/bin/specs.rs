//! AFL target: see [`ftlsim_fuzz::specs`].

fn main() {
    afl::fuzz!(|data: &[u8]| ftlsim_fuzz::specs(data));
}
