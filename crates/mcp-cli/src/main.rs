//! The `mcp` command.

fn main() {
    println!("mcp: the command-line client lands with the client issue");
}
