/work/main/target/release/deps/futures_sink-e2cd899e8011adf5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/futures-sink-0.3.34/src/lib.rs

/work/main/target/release/deps/libfutures_sink-e2cd899e8011adf5.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/futures-sink-0.3.34/src/lib.rs

/work/main/target/release/deps/libfutures_sink-e2cd899e8011adf5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/futures-sink-0.3.34/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/futures-sink-0.3.34/src/lib.rs:
