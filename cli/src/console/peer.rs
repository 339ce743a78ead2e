//! Defines who is on the other end of a loopback connection: on Linux, the user that owns the
//! client's socket, read from `/proc/net/tcp` and `/proc/net/tcp6` (the kernel's own table, a row
//! per socket with its owner's uid). Loopback is shared by every user of the machine, and the
//! launch link reaches the browser's command line, which others may read; the console answers
//! only its own user. Elsewhere the token and cookie are the only key (docs/console.md).

use std::net::SocketAddr;

/// Whether the client at `peer`, connected to the console at `local`, runs as this process's
/// user. `None` where the owner cannot be known on this platform.
pub fn same_user(peer: SocketAddr, local: SocketAddr) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let table = if peer.is_ipv4() { "/proc/net/tcp" } else { "/proc/net/tcp6" };
        // A table that cannot be read (a hardened /proc) cannot say the client is ours.
        let text = std::fs::read_to_string(table).unwrap_or_default();
        let owner = owner(&text, peer, local);
        Some(owner == Some(rustix::process::getuid().as_raw()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (peer, local);
        None
    }
}

/// The uid of the socket whose local address is `peer` and remote address `local`: the client's
/// side of the connection. Addresses are written as the kernel writes them: each 32-bit word of
/// the address in the machine's byte order, in hex, then `:` and the port in hex.
#[cfg(any(target_os = "linux", test))]
pub fn owner(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (want_local, want_remote) = (kernel_form(peer), kernel_form(local));
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        (local.eq_ignore_ascii_case(&want_local) && remote.eq_ignore_ascii_case(&want_remote))
            .then(|| uid.parse().ok())
            .flatten()
    })
}

#[cfg(any(target_os = "linux", test))]
fn kernel_form(addr: SocketAddr) -> String {
    let words: Vec<u32> = match addr {
        SocketAddr::V4(v4) => vec![u32::from_ne_bytes(v4.ip().octets())],
        SocketAddr::V6(v6) => {
            v6.ip().octets().chunks(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
        }
    };
    let hex: String = words.iter().map(|w| format!("{w:08X}")).collect();
    format!("{hex}:{:04X}", addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_side_row_names_the_owner() {
        // Rows as a little-endian Linux writes them: the console listening on 127.0.0.1:8765
        // (0x223D), a client at port 40000 (0x9C40) owned by uid 1000, and the console's side of
        // the same connection owned by uid 0.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:223D 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:223D 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0100007F:9C40 0100007F:223D 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1";
        let (peer, local) = ("127.0.0.1:40000".parse().unwrap(), "127.0.0.1:8765".parse().unwrap());
        if cfg!(target_endian = "little") {
            assert_eq!(owner(table, peer, local), Some(1000));
        }
        assert_eq!(owner(table, "127.0.0.1:40001".parse().unwrap(), local), None, "no such connection");
    }

    /// A real connection in this process: the kernel's table names this user as its owner.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_of_this_process_is_this_user_s() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(same_user(peer, server.local_addr().unwrap()), Some(true));
        if let Ok(v6) = std::net::TcpListener::bind("[::1]:0") {
            let client = std::net::TcpStream::connect(v6.local_addr().unwrap()).unwrap();
            let (server, peer) = v6.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(same_user(peer, server.local_addr().unwrap()), Some(true), "over [::1]");
        }
    }
}
