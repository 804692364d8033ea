//! The tests' HTTP range server (`tests/common/range_server.rs`) as a program, for the
//! remote benchmark (`benches/remote.py`): serves FOLDER on 127.0.0.1, LATENCY_MS before
//! each answer; prints its base URL, then for each line read on standard input the
//! requests and body bytes so far (and resets them).
//!
//!     cargo run --release -p rasdf --example range_server -- FOLDER LATENCY_MS

use rasdf_testkit::range_server;

use std::io::BufRead;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(folder), latency) = (args.next(), args.next()) else {
        eprintln!("usage: range_server FOLDER [LATENCY_MS]");
        std::process::exit(2);
    };
    let latency =
        std::time::Duration::from_secs_f64(latency.and_then(|l| l.parse::<f64>().ok()).unwrap_or(0.0) / 1000.0);
    let server =
        range_server::RangeServer::start(folder, range_server::ServerOptions { latency, ..Default::default() });
    println!("{}", server.base());
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
        println!("{} {}", server.requests(), server.bytes_sent());
        server.reset_counters();
    }
}
