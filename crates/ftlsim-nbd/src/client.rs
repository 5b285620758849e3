//! A minimal NBD client (fixed newstyle, GO, simple replies, one request
//! at a time), for tests and tools that drive a server from Rust.
//!
//! ```no_run
//! use ftlsim_nbd::client::Client;
//!
//! let mut c = Client::connect_tcp("127.0.0.1:10809").unwrap();
//! c.write(0, &[7; 4096], false).unwrap();
//! c.flush().unwrap();
//! assert_eq!(c.read(0, 4096).unwrap(), vec![7; 4096]);
//! ```

use crate::proto::*;
use crate::stream::Stream;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;

pub struct Client {
    stream: Stream,
    size: u64,
    cookie: u64,
}

fn protocol(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Client {
    pub fn connect_tcp(addr: &str) -> io::Result<Client> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Client::handshake(Stream::Tcp(s))
    }

    pub fn connect_unix(path: &Path) -> io::Result<Client> {
        Client::handshake(Stream::Unix(UnixStream::connect(path)?))
    }

    /// Greeting, then GO on the default export.
    fn handshake(mut stream: Stream) -> io::Result<Client> {
        let mut g = [0u8; 18];
        stream.read_exact(&mut g)?;
        if g[..8] != NBDMAGIC.to_be_bytes() || g[8..16] != IHAVEOPT.to_be_bytes() {
            return Err(protocol("not an NBD newstyle server"));
        }
        stream.write_all(&(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES).to_be_bytes())?;
        // GO: empty name (the default export), no information requests.
        let mut opt = IHAVEOPT.to_be_bytes().to_vec();
        opt.extend_from_slice(&OPT_GO.to_be_bytes());
        opt.extend_from_slice(&6u32.to_be_bytes());
        opt.extend_from_slice(&[0; 6]);
        stream.write_all(&opt)?;
        let mut size = None;
        loop {
            let mut h = [0u8; 20];
            stream.read_exact(&mut h)?;
            let kind = u32::from_be_bytes(h[12..16].try_into().expect("4 bytes"));
            let len = u32::from_be_bytes(h[16..20].try_into().expect("4 bytes"));
            if len > 1 << 16 {
                return Err(protocol(format!("option reply of {len} bytes")));
            }
            let mut payload = vec![0u8; len as usize];
            stream.read_exact(&mut payload)?;
            match kind {
                REP_ACK => break,
                REP_INFO if payload.len() >= 10 && payload[..2] == INFO_EXPORT.to_be_bytes() => {
                    size = Some(u64::from_be_bytes(payload[2..10].try_into().expect("8 bytes")));
                }
                REP_INFO => {}
                _ => return Err(protocol(format!("GO refused ({kind:#x}): {}", String::from_utf8_lossy(&payload)))),
            }
        }
        let size = size.ok_or_else(|| protocol("no export size before the ACK"))?;
        Ok(Client { stream, size, cookie: 0 })
    }

    /// The export's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn request(&mut self, kind: u16, flags: u16, offset: u64, length: u32, data: &[u8]) -> io::Result<()> {
        self.cookie += 1;
        let r = Request { magic: REQUEST_MAGIC, flags, kind, cookie: self.cookie, offset, length };
        let mut b = r.encode().to_vec();
        b.extend_from_slice(data);
        self.stream.write_all(&b)?;
        let mut h = [0u8; 16];
        self.stream.read_exact(&mut h)?;
        if h[..4] != SIMPLE_REPLY_MAGIC.to_be_bytes() || h[8..] != self.cookie.to_be_bytes() {
            return Err(protocol("reply out of step"));
        }
        match u32::from_be_bytes(h[4..8].try_into().expect("4 bytes")) {
            0 => Ok(()),
            e => Err(io::Error::other(format!("server answered error {e}"))),
        }
    }

    pub fn read(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        self.request(CMD_READ, 0, offset, len, &[])?;
        let mut data = vec![0u8; len as usize];
        self.stream.read_exact(&mut data)?;
        Ok(data)
    }

    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| protocol("write over 4 GiB"))?;
        self.request(CMD_WRITE, if fua { CMD_FLAG_FUA } else { 0 }, offset, len, data)
    }

    pub fn trim(&mut self, offset: u64, len: u32) -> io::Result<()> {
        self.request(CMD_TRIM, 0, offset, len, &[])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.request(CMD_FLUSH, 0, 0, 0, &[])
    }

    /// Sends a WRITE of `data` but only its first `sent` bytes, and closes
    /// without waiting for a reply: a client killed mid-request (fault
    /// tests). All of it sent, the server may or may not have done it.
    pub fn abort_write(mut self, offset: u64, data: &[u8], sent: usize) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| protocol("write over 4 GiB"))?;
        let r = Request { magic: REQUEST_MAGIC, flags: 0, kind: CMD_WRITE, cookie: 1, offset, length: len };
        let mut b = r.encode().to_vec();
        b.extend_from_slice(&data[..sent.min(data.len())]);
        self.stream.write_all(&b)
    }

    /// Sends a READ and closes without reading the reply (fault tests).
    pub fn abort_read(mut self, offset: u64, len: u32) -> io::Result<()> {
        let r = Request { magic: REQUEST_MAGIC, flags: 0, kind: CMD_READ, cookie: 1, offset, length: len };
        self.stream.write_all(&r.encode())
    }

    /// Says goodbye (NBD_CMD_DISC) and closes.
    pub fn disconnect(mut self) -> io::Result<()> {
        let r = Request { magic: REQUEST_MAGIC, flags: 0, kind: CMD_DISC, cookie: 0, offset: 0, length: 0 };
        self.stream.write_all(&r.encode())
    }
}
