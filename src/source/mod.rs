//! Where objects come from.
