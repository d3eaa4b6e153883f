//! The cluster zone.
