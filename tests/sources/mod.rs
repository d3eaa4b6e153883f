//! Where the objects come from: the API watch against the stand-in API server (`apiserver`,
//! `watch`, `live`: list and watch, protobuf, re-lists, 410s, snapshot files, the live server
//! following them) and the objects files (`loader`). The real API server's side is
//! tests/cluster/.

mod apiserver;
pub(crate) mod live;
mod loader;
mod watch;
