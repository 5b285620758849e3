//! Captures what real NBD clients send to ftlsim's server, as `nbd` seeds
//! (`fuzz/corpus/nbd/captured-*`): qemu-io (QEMU's NBD client) and libnbd
//! (through its Python binding) are run against a server behind a proxy
//! that records the client's bytes. Needs those clients, so it runs only
//! when asked: `cargo test -p ftlsim-fuzz --test capture -- --ignored`.

use ftlsim::{Config, Simulation};
use ftlsim_fuzz::seeds::repo_root;
use ftlsim_nbd::{Control, Listen, ServeOptions, Server};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

/// Forwards one connection from `listener` to `server`; returns what the
/// client sent.
fn record_one(listener: &UnixListener, server: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let (mut client, _) = listener.accept().expect("client connects");
    std::thread::spawn({
        let server = server.to_path_buf();
        move || {
            let mut upstream = UnixStream::connect(&server).expect("server listens");
            let (mut up_read, mut down) = (upstream.try_clone().expect("clone"), client.try_clone().expect("clone"));
            let replies = std::thread::spawn(move || std::io::copy(&mut up_read, &mut down));
            let mut sent = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = client.read(&mut buf) {
                sent.extend_from_slice(&buf[..n]);
                if upstream.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = upstream.shutdown(std::net::Shutdown::Write);
            let _ = replies.join();
            sent
        }
    })
}

#[test]
#[ignore = "needs qemu-io and libnbd's Python binding; writes fuzz/corpus/nbd"]
fn capture_real_clients() {
    let dir = std::env::temp_dir().join(format!("ftlsim-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (socket, proxy) = (dir.join("server.sock"), dir.join("proxy.sock"));
    let o = ["nand.store_payloads=true", "geometry.blocks_per_plane=64"].map(String::from);
    let sim = Simulation::new(Config::load("k9lag08u0m-4ch", &o).unwrap()).unwrap();
    let server = Server::bind(sim, ServeOptions::new(Listen::Unix(socket.clone()))).unwrap();
    let control = Control::default();
    let running = std::thread::spawn({
        let control = control.clone();
        move || server.run(&control)
    });
    let listener = UnixListener::bind(&proxy).unwrap();
    let url = format!("nbd+unix:///?socket={}", proxy.display());
    let qemu_io = |cmds: &[&str]| {
        let mut c = Command::new("qemu-io");
        c.args(["-f", "raw", &url]);
        for cmd in cmds {
            c.args(["-c", cmd]);
        }
        c
    };
    let libnbd = |script: &str| {
        let mut c = Command::new("/usr/bin/python3");
        c.args(["-c", &format!("import nbd\nh = nbd.NBD()\nh.connect_uri({url:?})\n{script}\nh.shutdown()")]);
        c
    };
    let clients: Vec<(&str, Command)> = vec![
        ("qemu-io-write-read", qemu_io(&["write -P 0xcd 0 4k", "read -P 0xcd 0 4k", "write -f -P 0x11 8k 512"])),
        ("qemu-io-trim-zero-flush", qemu_io(&["write -z 4k 8k", "discard 0 4k", "flush", "read 0 64k"])),
        (
            "libnbd",
            libnbd(
                "h.pwrite(b'\\x5a' * 4096, 8192)\nh.pread(4096, 8192)\nh.trim(4096, 0)\n\
                 h.zero(4096, 16384)\nh.pwrite(b'x' * 512, 512, nbd.CMD_FLAG_FUA)\nh.flush()",
            ),
        ),
    ];
    let out = repo_root().join("fuzz/corpus/nbd");
    for (name, mut cmd) in clients {
        let mut child = cmd.spawn().expect("client starts");
        let recorded = record_one(&listener, &socket);
        let status = child.wait().unwrap();
        assert!(status.success(), "{name}: {status}");
        let bytes = recorded.join().unwrap();
        // The target's first byte picks the drive (0: page).
        std::fs::write(out.join(format!("captured-{name}")), [&[0u8][..], &bytes].concat()).unwrap();
    }
    control.stop.store(true, Ordering::Relaxed);
    running.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(PathBuf::from(&dir));
}
