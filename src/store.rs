//! The published snapshot.
