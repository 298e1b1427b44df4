//! The local-process sandbox.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::groups::Registry;
use crate::isolation;
use crate::output::Output;
use crate::sink::log_sink;
use crate::{Exit, ExitStatus, Job, LogLine, Sandbox, SandboxError, SandboxKind, Stream};

/// `PATH` for scripts that do not declare their own: the system directories only.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long output is still read after the job's processes are killed.
const PIPE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How much one read from a pipe takes at most.
const READ_BUFFER: usize = 64 * 1024;

/// Runs jobs as local processes, each in a process group of its own so a timeout or a
/// cancel kills everything the script started. No isolation beyond a clean environment:
/// for scripts the operator trusts (the embedded default).
#[derive(Debug, Clone, Default)]
pub struct ProcessSandbox {
    registry: Option<Registry>,
}

impl ProcessSandbox {
    /// A sandbox that records the process groups it starts in `dir`, so that
    /// [`ProcessSandbox::reap_orphans`] after a crash can stop what was left running.
    pub fn with_registry(dir: PathBuf) -> Self {
        Self {
            registry: Some(Registry::new(dir)),
        }
    }

    /// Kills the process groups a previous sandbox on the same registry started and did
    /// not see end (its process was killed). Returns how many it killed. Call it before
    /// running jobs.
    pub fn reap_orphans(&self) -> std::io::Result<usize> {
        self.registry.as_ref().map_or(Ok(0), Registry::reap)
    }

    /// Whether jobs with a relay run in namespaces of their own (user, network, pid), so
    /// that the relay's ports are their only way out. Probed once per process (a fork);
    /// when the kernel refuses, such jobs run on the host's network without the relay, and
    /// the runner should point them at TCP listeners of its own instead.
    pub fn namespaces_work() -> bool {
        isolation::unshare().is_some()
    }
}

/// How a job's script is started: the shell, or the shell behind the relay in namespaces
/// of its own.
fn command(job: &Job, unshare: Option<&Path>) -> Result<Command, SandboxError> {
    let relay = match (&job.relay, unshare) {
        (Some(relay), Some(unshare)) => Some((relay, unshare)),
        _ => None,
    };
    let Some((relay, unshare)) = relay else {
        // By its path: with `PATH` set for the child, the standard library would fork
        // this whole process to look `sh` up, where a path lets it spawn (vfork) at once.
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(&job.script);
        return Ok(command);
    };
    if !relay.binary.is_file() {
        return Err(SandboxError::Prepare {
            what: "relay binary",
            path: relay.binary.clone(),
            source: std::io::Error::other(
                "not a file; build it with deploy/sandbox/build-relay.sh",
            ),
        });
    }
    let mut command = Command::new(unshare);
    command
        .args(isolation::FLAGS)
        .arg(&relay.binary)
        .args(relay.arguments(|_, forward| forward.socket.to_string_lossy().into_owned()))
        .args(["/bin/sh", "-c"])
        .arg(&job.script);
    Ok(command)
}

#[async_trait]
impl Sandbox for ProcessSandbox {
    /// Where user namespaces work, a job with a relay gets a network of its own.
    fn isolates_network(&self, _profile: &crate::Profile) -> bool {
        Self::namespaces_work()
    }

    /// A process profile has only the timeout: the Docker limits (image, network, memory,
    /// cpus, pids, user, mounts) mean nothing to a local process and are ignored.
    async fn run(
        &self,
        job: &Job,
        logs: mpsc::Sender<LogLine>,
        cancel: CancellationToken,
    ) -> Result<Exit, SandboxError> {
        if job.profile.kind != SandboxKind::Process {
            // Running a docker node as a plain process would silently drop its isolation.
            return Err(SandboxError::WrongSandbox {
                kind: job.profile.kind,
                sandbox: SandboxKind::Process,
            });
        }
        // On this thread, not a blocking one: the runner has made most of them already, so
        // each is a `stat` or one `mkdir`, microseconds, where a trip to the blocking pool
        // costs two thread wake-ups.
        for (what, path) in [
            ("workspace", &job.workspace),
            ("artifact directory", &job.artifacts),
            ("input directory", &job.inputs),
        ] {
            std::fs::create_dir_all(path).map_err(|source| SandboxError::Prepare {
                what,
                path: path.clone(),
                source,
            })?;
        }
        if let Some(relay) = &job.relay {
            relay.check()?;
        }
        let unshare = match (&job.relay, isolation::known()) {
            (None, _) => None,
            (Some(_), Some(known)) => known,
            (Some(_), None) => tokio::task::spawn_blocking(isolation::unshare)
                .await
                .ok()
                .flatten(),
        };
        if let Some(home) = &job.home {
            tokio::fs::create_dir_all(home)
                .await
                .map_err(|source| SandboxError::Prepare {
                    what: "home directory",
                    path: home.clone(),
                    source,
                })?;
        }
        let mut command = command(job, unshare)?;
        command
            .env_clear()
            .env("PATH", DEFAULT_PATH)
            .env("HOME", job.home.as_deref().unwrap_or(&job.workspace))
            .envs(&job.env)
            .env("GATEHOUSE_WORKSPACE", &job.workspace)
            .env("GATEHOUSE_ARTIFACTS", &job.artifacts)
            .env("GATEHOUSE_INPUTS", &job.inputs)
            .current_dir(&job.workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command.spawn().map_err(SandboxError::Spawn)?;
        // The group id is the child's pid (process_group(0)).
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        if let (Some(registry), Some(group)) = (&self.registry, group)
            && let Err(e) = registry.record(group)
        {
            tracing::warn!(error = %e, "recording a process group failed");
        }
        let (mut sink, forwarder) = log_sink(logs);
        if job.relay.is_some() && unshare.is_none() {
            sink.send(LogLine {
                stream: Stream::Stderr,
                line: isolation::REFUSED.into(),
            });
        }
        let stop_reading = CancellationToken::new();
        let stdout = child.stdout.take().map(|pipe| {
            let output = Output::new(sink.clone(), job.stdout_tail);
            read(pipe, Stream::Stdout, output, stop_reading.clone())
        });
        let stderr = child.stderr.take().map(|pipe| {
            let output = Output::new(sink, 0);
            read(pipe, Stream::Stderr, output, stop_reading.clone())
        });
        let timeout = async {
            match job.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let status = tokio::select! {
            waited = child.wait() => match waited {
                Ok(s) => match s.code() {
                    Some(code) => ExitStatus::Exited(code),
                    None => ExitStatus::Signalled(s.signal().unwrap_or(0)),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "waiting for the script failed");
                    ExitStatus::Signalled(0)
                }
            },
            () = timeout => ExitStatus::TimedOut,
            () = cancel.cancelled() => ExitStatus::Cancelled,
        };
        // Whatever the script left behind (background jobs) goes with it.
        if let Some(group) = group {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            if let Some(registry) = &self.registry {
                registry.forget(group);
            }
        }
        let _ = child.wait().await;
        // The readers end once every process holding the pipes is gone; one that left the
        // group (setsid) could hold them open, so the wait is bounded.
        let grace = tokio::time::sleep(PIPE_GRACE);
        tokio::pin!(grace);
        let mut stdout_tail = Vec::new();
        for (stream, reader) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
            let Some(mut reader) = reader else { continue };
            let tail = tokio::select! {
                tail = &mut reader => tail,
                () = &mut grace => {
                    tracing::warn!(
                        "a process outside the job's group kept its output open; stopped reading"
                    );
                    stop_reading.cancel();
                    reader.await
                }
            };
            if stream == Stream::Stdout {
                stdout_tail = tail.unwrap_or_default();
            }
        }
        // Every line read reaches the channel before the job is reported done.
        forwarder.drain().await;
        Ok(Exit {
            status,
            duration: started.elapsed(),
            pids_limit_reached: false,
            stdout_tail,
        })
    }
}

/// Reads one pipe to its end (or until `stop`), returning the stdout tail it kept.
fn read(
    mut pipe: impl AsyncRead + Unpin + Send + 'static,
    stream: Stream,
    mut output: Output,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut buffer = vec![0; READ_BUFFER];
        loop {
            tokio::select! {
                read = pipe.read(&mut buffer) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => output.push(stream, &buffer[..n]),
                },
                () = stop.cancelled() => break,
            }
        }
        output.finish()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ffi::OsStr;

    use super::*;
    use crate::{Forward, JobLabels, Profile, Relay};

    fn job(relay: Option<Relay>) -> Job {
        Job {
            script: "echo hi".into(),
            env: BTreeMap::new(),
            workspace: "/ws".into(),
            artifacts: "/art".into(),
            inputs: "/in".into(),
            timeout: None,
            profile: Profile::default(),
            labels: JobLabels {
                run: "r".into(),
                node: "n".into(),
                attempt: 1,
            },
            stdout_tail: 0,
            relay,
            home: None,
        }
    }

    fn relay(binary: &str) -> Relay {
        Relay {
            binary: binary.into(),
            forwards: vec![Forward {
                port: 8080,
                socket: "/run/gw.sock".into(),
            }],
        }
    }

    fn program_and_args(command: &Command) -> Vec<String> {
        let command = command.as_std();
        std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(OsStr::to_string_lossy)
            .map(String::from)
            .collect()
    }

    #[test]
    fn with_namespaces_the_relay_runs_the_shell_inside_them() {
        // Any existing file stands for the relay binary.
        let job = job(Some(relay("/bin/sh")));
        let command = command(&job, Some(Path::new("/usr/bin/unshare"))).unwrap();
        assert_eq!(
            program_and_args(&command),
            [
                "/usr/bin/unshare",
                "--user",
                "--map-current-user",
                "--net",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "/bin/sh",
                "--forward",
                "127.0.0.1:8080=/run/gw.sock",
                "--",
                "/bin/sh",
                "-c",
                "echo hi",
            ]
        );
    }

    #[test]
    fn without_namespaces_or_a_relay_the_shell_runs_alone() {
        for job in [job(Some(relay("/bin/sh"))), job(None)] {
            let command = command(&job, None).unwrap();
            assert_eq!(program_and_args(&command), ["/bin/sh", "-c", "echo hi"]);
        }
        let command = command(&job(None), Some(Path::new("/usr/bin/unshare"))).unwrap();
        assert_eq!(program_and_args(&command), ["/bin/sh", "-c", "echo hi"]);
    }

    #[test]
    fn a_missing_relay_binary_says_how_to_build_it() {
        let job = job(Some(relay("/nonexistent/gatehouse-relay")));
        let Err(error) = command(&job, Some(Path::new("/usr/bin/unshare"))) else {
            panic!("accepted a missing relay binary");
        };
        assert!(error.to_string().contains("build-relay.sh"), "{error}");
    }
}
