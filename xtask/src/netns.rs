//! Namespaces that live exactly as long as this process: each is made by `unshare` around a
//! small holder process, started through `setpriv --pdeathsig KILL` from a thread that never
//! ends, so the kernel kills the holder when this process dies, however it dies — and with
//! a PID namespace's holder (its init), every process in that namespace, containers
//! included; with its mount namespace, every mount made there. Nothing a node does can then
//! outlive the test or the command that made it.
//!
//! A namespace is entered by `nsenter` (commands) or, for a socket, by one thread that calls
//! `setns` ([`in_netns`]): a socket keeps the network namespace it was made in, so a listener
//! made there serves it from any thread.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sched::{CloneFlags, setns};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

type Spawn = (Command, Sender<std::io::Result<Child>>);

/// Starts `command` from the thread that starts every process tied to this one: a parent
/// death signal goes with the thread that forked the child, so that thread must live as long
/// as the process.
pub fn spawn(command: Command) -> Result<Child> {
    static SPAWNER: OnceLock<Mutex<Sender<Spawn>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (sender, receiver) = channel::<Spawn>();
        std::thread::Builder::new()
            .name("xtask-spawner".into())
            .spawn(move || {
                for (mut command, reply) in receiver {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok();
        Mutex::new(sender)
    });
    let (reply, answer) = channel();
    let program = format!("{:?}", command.get_program());
    sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((command, reply))
        .context("the spawner thread is gone")?;
    answer
        .recv()
        .context("the spawner thread is gone")?
        .with_context(|| format!("cannot start {program}"))
}

/// `setpriv --pdeathsig KILL -- PROGRAM ARGS`, its output appended to `log`.
pub fn tied<S: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[S],
    log: &Path,
) -> Result<Command> {
    let mut command = Command::new("setpriv");
    command
        .args(["--pdeathsig", "KILL", "--"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(append(log)?)
        .stderr(append(log)?);
    Ok(command)
}

/// `log`, opened to append to.
pub fn append(log: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("open {}", log.display()))
}

/// Which namespaces a [`Holder`] makes.
#[derive(Debug, Clone, Copy)]
pub enum Kinds {
    /// A network namespace.
    Net,
    /// A network, mount and PID namespace, /proc mounted for the PID namespace: a node.
    Node,
}

/// A process holding new namespaces: `unshare`'s child, PID 1 of a new PID namespace for a
/// node. Killed (and with it, everything in its namespaces) when dropped.
pub struct Holder {
    unshare: Child,
    /// The holder's PID in this process's PID namespace.
    pub pid: u32,
}

impl Holder {
    /// Starts one, logging to `log`.
    pub fn new(kinds: Kinds, log: &Path) -> Result<Self> {
        let flags: &[&str] = match kinds {
            Kinds::Net => &["--net"],
            Kinds::Node => &["--net", "--mount", "--pid", "--mount-proc"],
        };
        let mut args = vec!["--fork", "--kill-child=KILL"];
        args.extend_from_slice(flags);
        // PID 1 of a node's PID namespace: a shell, which reaps the orphans it adopts each
        // time its sleep ends.
        args.extend_from_slice(&["--", "/bin/sh", "-c", "while :; do sleep 1; done"]);
        let mut unshare = spawn(tied("unshare", &args, log)?)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid = loop {
            if let Some(child) = children(unshare.id()).first() {
                break *child;
            }
            if let Some(status) = unshare.try_wait()? {
                bail!(
                    "unshare exited ({status}): {}",
                    std::fs::read_to_string(log).unwrap_or_default().trim()
                );
            }
            if Instant::now() > deadline {
                bail!("unshare started no holder within 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // The child has its namespaces, and a node's /proc mounted, once it runs the shell.
        while std::fs::read_to_string(format!("/proc/{pid}/comm"))?.trim() != "sh" {
            if Instant::now() > deadline {
                bail!("the holder {pid} never entered its namespaces");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Self { unshare, pid })
    }

    /// The network namespace's file.
    pub fn net(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.pid))
    }

    /// nsenter's arguments that run `program ARGS` inside the holder's namespaces: `--target
    /// PID --net` (and `--mount --pid` for a node's, where nsenter forks the program into the
    /// PID namespace and waits for it).
    pub fn nsenter<S: AsRef<OsStr>>(
        &self,
        kinds: Kinds,
        program: impl AsRef<OsStr>,
        args: &[S],
    ) -> Vec<OsString> {
        let mut all: Vec<OsString> = vec![format!("--target={}", self.pid).into(), "--net".into()];
        if let Kinds::Node = kinds {
            all.extend(["--mount".into(), "--pid".into()]);
        }
        all.push("--".into());
        all.push(program.as_ref().to_owned());
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        all
    }

    /// A command that runs `program` inside the holder's namespaces ([`Holder::nsenter`]).
    pub fn command(&self, kinds: Kinds, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command.args(self.nsenter::<&str>(kinds, program, &[]));
        command
    }

    /// Starts `program ARGS` inside the holder's namespaces, tied to this process ([`tied`]),
    /// its output appended to `log`.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        kinds: Kinds,
        program: impl AsRef<OsStr>,
        args: &[S],
        log: &Path,
    ) -> Result<Child> {
        spawn(tied("nsenter", &self.nsenter(kinds, program, args), log)?)
    }

    /// `ip -batch -` inside the network namespace, one command per line.
    pub fn ip(&self, commands: &[String]) -> Result<()> {
        let mut child = self
            .command(Kinds::Net, "ip")
            .args(["-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("run ip (iproute2)")?;
        child
            .stdin
            .take()
            .context("ip's stdin")?
            .write_all(commands.join("\n").as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "ip -batch in {}: {}\n{}",
                self.pid,
                String::from_utf8_lossy(&out.stderr).trim(),
                commands.join("\n")
            );
        }
        Ok(())
    }

    /// `sysctl -w` inside the network namespace (the `net.` keys are the namespace's own).
    pub fn sysctl(&self, settings: &[&str]) -> Result<()> {
        let out = self
            .command(Kinds::Net, "sysctl")
            .arg("-qw")
            .args(settings)
            .output()
            .context("run sysctl")?;
        if !out.status.success() {
            bail!(
                "sysctl {settings:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Kills the holder, and with it everything in its PID namespace.
    pub fn kill(&mut self) {
        let _ = self.unshare.kill();
        let _ = self.unshare.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The children of process `pid` (its main thread's).
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Sends `signal` to `pid`; a process already gone is not an error.
pub fn signal(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}

/// Runs `f` on a thread of its own inside the network namespace `netns` (a file such as
/// /proc/PID/ns/net): what it binds or connects is that namespace's.
pub fn in_netns<T: Send>(netns: &Path, f: impl FnOnce() -> T + Send) -> Result<T> {
    let file = File::open(netns).with_context(|| format!("open {}", netns.display()))?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || -> Result<T> {
                setns(&file, CloneFlags::CLONE_NEWNET)
                    .with_context(|| format!("setns {}", netns.display()))?;
                Ok(f())
            })
            .join()
            .map_err(|_| anyhow::anyhow!("a thread in {} panicked", netns.display()))?
    })
}

/// Relays every TCP connection to `listen` in network namespace `netns` to `to` in this
/// process's, in threads that live as long as the process.
pub fn relay(netns: &Path, listen: SocketAddr, to: SocketAddr) -> Result<()> {
    let listener = in_netns(netns, || TcpListener::bind(listen))?
        .with_context(|| format!("listen on {listen} in {}", netns.display()))?;
    std::thread::Builder::new()
        .name(format!("relay-{listen}"))
        .spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(to) else {
                    continue;
                };
                let (Ok(client_read), Ok(server_read)) = (client.try_clone(), server.try_clone())
                else {
                    continue;
                };
                pipe(client_read, server);
                pipe(server_read, client);
            }
        })?;
    Ok(())
}

/// Copies `from` to `to` on a thread of its own until `from` ends.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// `GET path` over HTTP/1.0 to `addr` in network namespace `netns`: the status and body.
pub fn http_get(netns: &Path, addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let mut stream = in_netns(netns, || {
        TcpStream::connect_timeout(&addr, Duration::from_secs(2))
    })?
    .with_context(|| format!("connect to {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not HTTP from {addr}: {response:.80}"))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}
