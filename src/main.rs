//! The `fsbench` binary: everything happens in the command layer, `fsbench::app`.

fn main() {
    std::process::exit(fsbench::app::main());
}
