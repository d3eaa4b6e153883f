//! Sockets and the request path.
