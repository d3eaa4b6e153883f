//! The upstream Service's ClusterIP, as node-cache finds it: from the environment variable the
//! kubelet sets in every pod for every Service of its namespace, `<NAME>_SERVICE_HOST` (the
//! name upper-cased, `-` as `_`: `kube-dns-upstream` is `KUBE_DNS_UPSTREAM_SERVICE_HOST`).

use std::net::IpAddr;

use super::error::Error;

/// The variable that holds the ClusterIP of Service `name`.
pub fn host_variable(name: &str) -> String {
    format!("{}_SERVICE_HOST", name.replace('-', "_").to_uppercase())
}

/// The ClusterIP of Service `name`, read with `lookup` (the environment); an error names the
/// variable and what it held.
pub fn cluster_ip(name: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<IpAddr, Error> {
    let variable = host_variable(name);
    match lookup(&variable) {
        None => Err(Error::new(format!(
            "-upstreamsvc {name}: ${variable} is not set; node-cache reads the Service's \
             ClusterIP from it (the kubelet sets it in pods of the Service's namespace, \
             kube-system, when the Service exists before the pod starts)"
        ))),
        Some(value) => value.trim().parse().map_err(|_| {
            Error::new(format!(
                "-upstreamsvc {name}: ${variable} is {value:?}, not an IP address"
            ))
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn variable_is_upper_cased_with_underscores() {
        assert_eq!(
            host_variable("kube-dns-upstream"),
            "KUBE_DNS_UPSTREAM_SERVICE_HOST"
        );
        assert_eq!(host_variable("kube-dns"), "KUBE_DNS_SERVICE_HOST");
    }

    #[test]
    fn missing_or_bad_value_is_an_error_naming_the_variable() {
        let ip = cluster_ip("kube-dns", |v| {
            (v == "KUBE_DNS_SERVICE_HOST").then(|| "10.96.0.10".to_owned())
        });
        assert_eq!(ip.unwrap().to_string(), "10.96.0.10");
        let missing = cluster_ip("kube-dns-upstream", |_| None).unwrap_err();
        assert!(
            missing
                .0
                .contains("$KUBE_DNS_UPSTREAM_SERVICE_HOST is not set")
        );
        let bad = cluster_ip("x", |_| Some("nope".to_owned())).unwrap_err();
        assert!(
            bad.0
                .contains("$X_SERVICE_HOST is \"nope\", not an IP address")
        );
    }
}
