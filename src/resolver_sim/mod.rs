//! The client side of cluster DNS: the resolv.conf the kubelet writes for a pod, and the
//! search-path walk a stub resolver (glibc or musl) makes with it, answered by the same
//! zone lookup the server answers with.

pub mod answer;
pub mod kubelet;
pub mod logs;
pub mod report;
pub mod stub;
