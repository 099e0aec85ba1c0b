//! The `fsbench` binary: parse arguments, call the library, map errors to exit codes.

fn main() {
    // Inside a qemu guest the kernel runs fsbench as init with this one argument
    // (`rdinit=/fsbench -- __guest-init`); it must not go through the CLI.
    if std::env::args().nth(1).as_deref() == Some("__guest-init") {
        fsbench::qemu::guest::init_main();
    }
    std::process::exit(fsbench::cli::main());
}
