//! Compiles `proto/*.proto` with protox (a pure-Rust protobuf compiler, so no `protoc` is
//! needed) and generates prost messages and tonic services.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/raft.proto"];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
