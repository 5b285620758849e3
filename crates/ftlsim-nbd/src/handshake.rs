//! The handshake: newstyle fixed greeting and option haggling.
//!
//! Supported options: EXPORT_NAME, ABORT, LIST, INFO and GO (with the
//! export, name, description and block-size information items). Every
//! other option is answered with `NBD_REP_ERR_UNSUP`, so a client can fall
//! back. Malformed options get `NBD_REP_ERR_INVALID`; what cannot be
//! answered within the protocol (a bad magic, an oversized option, an
//! unknown export under EXPORT_NAME, too many options) closes the
//! connection. The server has one export; both its name and the empty
//! (default) name select it.

use crate::proto::*;
use std::io::{self, Read, Write};

/// Largest option payload accepted; names are at most 4 KiB by the protocol.
const MAX_OPTION_BYTES: u32 = 16 * 1024;
/// Options one connection may send before it is dropped (bounds the loop).
const MAX_OPTIONS: u32 = 256;

/// What the server exports.
#[derive(Clone, Debug)]
pub struct Export {
    pub name: String,
    pub description: String,
    pub size: u64,
    pub transmission_flags: u16,
    pub min_block: u32,
    pub preferred_block: u32,
    pub max_block: u32,
}

/// How haggling ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The client chose the export: enter transmission.
    Transmission,
    /// The client aborted or was refused; the connection ends.
    Closed(String),
}

/// Runs the handshake on `stream`. `admit` is asked when the client
/// selects the export; a reason it returns (too many connections) refuses
/// the selection with that message.
pub fn negotiate<S: Read + Write>(
    stream: &mut S,
    export: &Export,
    admit: &mut dyn FnMut() -> Option<String>,
) -> io::Result<Outcome> {
    let mut greeting = Vec::with_capacity(18);
    greeting.extend_from_slice(&NBDMAGIC.to_be_bytes());
    greeting.extend_from_slice(&IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    stream.write_all(&greeting)?;
    stream.flush()?;
    let client_flags = read_u32(stream)?;
    if client_flags & !(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES) != 0 {
        return Ok(Outcome::Closed(format!("unknown client flags {client_flags:#x}")));
    }
    if client_flags & CLIENT_FIXED_NEWSTYLE == 0 {
        // Without "fixed", an unknown option could not even be refused.
        return Ok(Outcome::Closed("client does not speak fixed newstyle".into()));
    }
    let no_zeroes = client_flags & CLIENT_NO_ZEROES != 0;
    for _ in 0..MAX_OPTIONS {
        let mut head = [0u8; 16];
        stream.read_exact(&mut head)?;
        let magic = u64::from_be_bytes(head[0..8].try_into().expect("8 bytes"));
        let option = u32::from_be_bytes(head[8..12].try_into().expect("4 bytes"));
        let len = u32::from_be_bytes(head[12..16].try_into().expect("4 bytes"));
        if magic != IHAVEOPT {
            return Ok(Outcome::Closed(format!("bad option magic {magic:#x}")));
        }
        if len > MAX_OPTION_BYTES {
            return Ok(Outcome::Closed(format!("option {option} carries {len} bytes (limit {MAX_OPTION_BYTES})")));
        }
        let mut data = vec![0u8; len as usize];
        stream.read_exact(&mut data)?;
        let reply = |s: &mut S, kind: u32, payload: &[u8]| option_reply(s, option, kind, payload);
        match option {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                if !selects(export, &name) {
                    return Ok(Outcome::Closed(format!("unknown export '{name}'")));
                }
                if let Some(why) = admit() {
                    return Ok(Outcome::Closed(why));
                }
                let mut b = Vec::with_capacity(134);
                b.extend_from_slice(&export.size.to_be_bytes());
                b.extend_from_slice(&export.transmission_flags.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0u8; 124]);
                }
                stream.write_all(&b)?;
                stream.flush()?;
                return Ok(Outcome::Transmission);
            }
            OPT_ABORT => {
                // The client may already be gone; the ACK is a courtesy.
                let _ = reply(stream, REP_ACK, &[]);
                return Ok(Outcome::Closed("client aborted".into()));
            }
            OPT_LIST if !data.is_empty() => reply(stream, REP_ERR_INVALID, b"LIST takes no data")?,
            OPT_LIST => {
                let mut b = (export.name.len() as u32).to_be_bytes().to_vec();
                b.extend_from_slice(export.name.as_bytes());
                b.extend_from_slice(export.description.as_bytes());
                reply(stream, REP_SERVER, &b)?;
                reply(stream, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => match parse_info_request(&data) {
                Err(why) => reply(stream, REP_ERR_INVALID, why.as_bytes())?,
                Ok((name, _)) if !selects(export, &name) => {
                    reply(stream, REP_ERR_UNKNOWN, format!("no export named '{name}'").as_bytes())?
                }
                Ok((_, items)) if option == OPT_INFO => {
                    send_info(stream, option, export, &items)?;
                    reply(stream, REP_ACK, &[])?;
                }
                Ok((_, items)) => match admit() {
                    Some(why) => reply(stream, REP_ERR_SHUTDOWN, why.as_bytes())?,
                    None => {
                        send_info(stream, option, export, &items)?;
                        reply(stream, REP_ACK, &[])?;
                        return Ok(Outcome::Transmission);
                    }
                },
            },
            _ => reply(stream, REP_ERR_UNSUP, format!("option {option} is not supported").as_bytes())?,
        }
    }
    Ok(Outcome::Closed(format!("more than {MAX_OPTIONS} options")))
}

fn selects(export: &Export, name: &str) -> bool {
    name.is_empty() || name == export.name
}

/// Parses INFO/GO data: name length, name, count of information requests, requests.
fn parse_info_request(data: &[u8]) -> Result<(String, Vec<u16>), String> {
    let short = || "option data shorter than its lengths say".to_string();
    let name_len = u32::from_be_bytes(data.get(0..4).ok_or_else(short)?.try_into().expect("4 bytes")) as usize;
    let name = data.get(4..4 + name_len).ok_or_else(short)?;
    let name = String::from_utf8(name.to_vec()).map_err(|_| "export name is not UTF-8".to_string())?;
    let rest = &data[4 + name_len..];
    let count = u16::from_be_bytes(rest.get(0..2).ok_or_else(short)?.try_into().expect("2 bytes")) as usize;
    if rest.len() != 2 + 2 * count {
        return Err(format!("{count} information requests need {} bytes, got {}", 2 * count, rest.len() - 2));
    }
    let items = rest[2..].chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    Ok((name, items))
}

fn send_info<S: Write>(stream: &mut S, option: u32, export: &Export, items: &[u16]) -> io::Result<()> {
    let mut b = INFO_EXPORT.to_be_bytes().to_vec();
    b.extend_from_slice(&export.size.to_be_bytes());
    b.extend_from_slice(&export.transmission_flags.to_be_bytes());
    option_reply(stream, option, REP_INFO, &b)?;
    for (item, text) in [(INFO_NAME, &export.name), (INFO_DESCRIPTION, &export.description)] {
        if items.contains(&item) {
            let mut b = item.to_be_bytes().to_vec();
            b.extend_from_slice(text.as_bytes());
            option_reply(stream, option, REP_INFO, &b)?;
        }
    }
    // Sent even when not asked for: the protocol allows it, and a client
    // that knows the 512 B minimum need not guess.
    let mut b = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    for v in [export.min_block, export.preferred_block, export.max_block] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    option_reply(stream, option, REP_INFO, &b)
}

fn option_reply<S: Write>(stream: &mut S, option: u32, kind: u32, payload: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + payload.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(payload);
    stream.write_all(&b)?;
    stream.flush()
}

fn read_u32<S: Read>(s: &mut S) -> io::Result<u32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_request_parsing() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&[0, 3, 0, 1]);
        assert_eq!(parse_info_request(&d).unwrap(), ("abc".to_string(), vec![3, 1]));
        assert!(parse_info_request(&d[..d.len() - 1]).is_err());
        assert!(parse_info_request(&[0, 0, 0, 9, b'x']).is_err());
        assert!(parse_info_request(&[]).is_err());
    }
}
