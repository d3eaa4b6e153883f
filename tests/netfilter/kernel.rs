//! Trace against the kernel (being built).
