//! `proxy render` and `proxy trace` before the kernel's netfilter: rendered rules loaded by
//! the real `iptables-restore` and `nft -f` (`load`), and packets sent for real through network
//! namespaces, the kernel's verdict read from conntrack and compared with `proxy trace`'s
//! (`kernel`). Each test runs where `unshare -n` (or `ip netns`) and the tools exist, and says
//! so when it cannot; `.ci/run` installs the tools and sets `CLUSTERDNS_REQUIRE_NETFILTER`, so
//! there the tests cannot be skipped.

mod kernel;
mod load;
