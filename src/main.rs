//! The `fsbench` binary: parse arguments, call the library, map errors to exit codes.

fn main() {
    std::process::exit(fsbench::cli::main());
}
