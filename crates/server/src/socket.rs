//! A client socket that can move from one tokio runtime to another.
//!
//! A connection is accepted, and its header read, on the low-priority
//! runtime ([`crate::header_runtime`]); once its header is complete it
//! moves to the collection runtime. A tokio socket is registered with the
//! reactor of the runtime that made it, and that reactor only runs on its
//! own (here: low-priority) threads, so a socket that merely changed task
//! would still wait for a low-priority thread to learn it is readable. So
//! the socket is taken out of its reactor ([`Socket::detach`]: a plain
//! `std` socket, still non-blocking) and registered with the other one
//! ([`Socket::attach`], called on the collection runtime). A TLS session
//! keeps its state across the move: it wraps a [`Socket`], which changes
//! in place under it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// An accepted TCP socket, registered with a runtime's reactor or between
/// two.
#[derive(Debug)]
pub enum Socket {
    /// Registered with the reactor of the runtime it is used on.
    Live(TcpStream),
    /// Between runtimes: no reactor knows it; reads and writes fail.
    Detached(std::net::TcpStream),
    /// After a failed move.
    Gone,
}

fn detached() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "socket not attached to a runtime",
    )
}

impl Socket {
    /// Takes the socket out of its runtime's reactor.
    pub fn detach(&mut self) -> io::Result<()> {
        match std::mem::replace(self, Socket::Gone) {
            Socket::Live(s) => {
                *self = Socket::Detached(s.into_std()?);
                Ok(())
            }
            other => {
                *self = other;
                Ok(())
            }
        }
    }

    /// Registers the socket with the reactor of the runtime this is called
    /// on (must be called within one).
    pub fn attach(&mut self) -> io::Result<()> {
        match std::mem::replace(self, Socket::Gone) {
            Socket::Detached(s) => {
                *self = Socket::Live(TcpStream::from_std(s)?);
                Ok(())
            }
            Socket::Gone => Err(detached()),
            live => {
                *self = live;
                Ok(())
            }
        }
    }

    /// Reads without consuming (the TLS sniffing of [`crate::transport`]).
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Live(s) => s.peek(buf).await,
            _ => Err(detached()),
        }
    }

    fn live(self: Pin<&mut Self>) -> io::Result<Pin<&mut TcpStream>> {
        match self.get_mut() {
            Socket::Live(s) => Ok(Pin::new(s)),
            _ => Err(detached()),
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.live() {
            Ok(s) => s.poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.live() {
            Ok(s) => s.poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.live() {
            Ok(s) => s.poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.live() {
            Ok(s) => s.poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

/// A client stream whose socket can move between runtimes: the socket
/// itself, or a TLS session over it.
pub trait Movable: AsyncRead + AsyncWrite + Send + Unpin + 'static {
    /// The socket under the stream.
    fn socket(&mut self) -> &mut Socket;
}

impl Movable for Socket {
    fn socket(&mut self) -> &mut Socket {
        self
    }
}

impl Movable for tokio_rustls::server::TlsStream<Socket> {
    fn socket(&mut self) -> &mut Socket {
        self.get_mut().0
    }
}
