//! Project automation: `cargo xtask codegen [--check]`.

fn main() {
    eprintln!("usage: cargo xtask codegen [--check]");
    std::process::exit(2);
}
