//! The server as a client and an operator meet it: answers (`answering`, `e2e`), the DNS
//! protocol (`protocol`), sockets and transports (`transport`), failures ridden out
//! (`reliability`), the Corefile and the distributions' Corefiles (`corefile`,
//! `distributions`), probes, metrics and dashboards (`observe`, `dashboards`).

mod answering;
mod corefile;
mod dashboards;
mod distributions;
mod e2e;
mod observe;
mod protocol;
mod reliability;
mod transport;
