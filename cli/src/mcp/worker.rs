//! The plugin on a thread of its own. Its calls are synchronous and its store is not shared, so
//! the async server sends each call here as a closure and awaits the answer; calls run one at a
//! time, in the order they arrive (as the plugin requires).

use anyhow::{Result, anyhow};
use self_evolve_host::Plugin;
use std::sync::mpsc;
use tokio_util::sync::CancellationToken;

type Job = Box<dyn FnOnce(&mut Plugin) + Send>;

#[derive(Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
    /// One permit per client request queued or running: a client that floods the server is
    /// told to retry instead of growing the queue (and the wait of every request behind it).
    in_flight: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Client requests queued or running at once, at most.
pub const MAX_IN_FLIGHT: usize = 64;

impl Worker {
    /// Starts the thread and builds the plugin on it with `make` (what `make` needs must be
    /// `Send`; the plugin itself never leaves the thread). Fails when `make` does.
    pub fn start(make: impl FnOnce() -> Result<Plugin> + Send + 'static) -> Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, started) = mpsc::channel::<Result<()>>();
        std::thread::Builder::new().name("self-evolve-plugin".into()).spawn(move || {
            let mut plugin = match make() {
                Ok(plugin) => {
                    let _ = ready.send(Ok(()));
                    plugin
                }
                Err(err) => {
                    let _ = ready.send(Err(err));
                    return;
                }
            };
            // Ends when every `Worker` handle is dropped.
            for job in queue {
                job(&mut plugin);
            }
        })?;
        started.recv().map_err(|_| anyhow!("the plugin thread stopped while starting"))??;
        Ok(Worker { jobs, in_flight: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)) })
    }

    /// Runs `f` on the plugin and returns its answer: the server's own calls (the tick), never
    /// refused for the clients' requests in flight.
    pub async fn call<R: Send + 'static>(&self, f: impl FnOnce(&mut Plugin) -> R + Send + 'static) -> Result<R> {
        self.queue(None, &CancellationToken::new(), f).await
    }

    /// `call` for a client's request: skipped when the client cancelled it before its turn came
    /// (ten cancelled index reads of a large library held every later call for 19 s), and
    /// answered at once when it is cancelled while waiting.
    pub async fn call_unless<R: Send + 'static>(
        &self,
        cancelled: &CancellationToken,
        f: impl FnOnce(&mut Plugin) -> R + Send + 'static,
    ) -> Result<R> {
        let permit = self.in_flight.clone().try_acquire_owned().map_err(|_| {
            anyhow!("the server has {MAX_IN_FLIGHT} requests queued or running; retry when some have been answered")
        })?;
        self.queue(Some(permit), cancelled, f).await
    }

    async fn queue<R: Send + 'static>(
        &self,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        cancelled: &CancellationToken,
        f: impl FnOnce(&mut Plugin) -> R + Send + 'static,
    ) -> Result<R> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let skip = cancelled.clone();
        self.jobs
            .send(Box::new(move |plugin| {
                let _permit = permit;
                if skip.is_cancelled() || reply.is_closed() {
                    return;
                }
                let _ = reply.send(f(plugin));
            }))
            .map_err(|_| anyhow!("the plugin thread has stopped"))?;
        tokio::select! {
            answer = answer => answer.map_err(|_| anyhow!("the request was cancelled, or the plugin thread stopped")),
            () = cancelled.cancelled() => Err(anyhow!("the request was cancelled")),
        }
    }

    /// The same, for code that is not async (start-up, tests).
    pub fn call_blocking<R: Send + 'static>(&self, f: impl FnOnce(&mut Plugin) -> R + Send + 'static) -> Result<R> {
        let (reply, answer) = mpsc::channel();
        self.jobs
            .send(Box::new(move |plugin| {
                let _ = reply.send(f(plugin));
            }))
            .map_err(|_| anyhow!("the plugin thread has stopped"))?;
        answer.recv().map_err(|_| anyhow!("the plugin thread stopped during a call"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn plugin() -> Plugin {
        let wasm = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
        Plugin::load(&wasm, self_evolve_host::HostConfig { cache_dir: None, ..Default::default() }).unwrap()
    }

    /// A request cancelled while an earlier one holds the plugin thread never runs, and its
    /// caller is answered at once; the calls after it run as usual.
    #[test]
    fn a_cancelled_request_is_dropped_from_the_queue() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let worker = Worker::start(|| Ok(plugin())).unwrap();
        let (busy, release) = mpsc::channel::<()>();
        let slow = worker.clone();
        let held = std::thread::spawn(move || slow.call_blocking(move |_| release.recv().ok()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let ran = Arc::new(AtomicBool::new(false));
        let token = CancellationToken::new();
        let flag = ran.clone();
        let answer = runtime.block_on(async {
            let waiting = worker.call_unless(&token, move |_| flag.store(true, Ordering::SeqCst));
            token.cancel();
            waiting.await
        });
        assert!(answer.unwrap_err().to_string().contains("cancelled"));
        busy.send(()).unwrap();
        held.join().unwrap().unwrap();
        assert_eq!(runtime.block_on(worker.call(|_| 42)).unwrap(), 42, "later calls run");
        assert!(!ran.load(Ordering::SeqCst), "the cancelled job never ran");
    }

    /// Past `MAX_IN_FLIGHT` queued or running requests, a request is refused at once; once they
    /// are answered, requests are taken again.
    #[test]
    fn a_flood_of_requests_is_refused_past_the_bound() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let worker = Worker::start(|| Ok(plugin())).unwrap();
        let (release, gate) = mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let (refused, handles, server_own) = runtime.block_on(async {
            let mut handles = Vec::new();
            for _ in 0..MAX_IN_FLIGHT {
                let (w, gate) = (worker.clone(), gate.clone());
                let job = move |_: &mut Plugin| gate.lock().map(|g| g.recv().is_ok()).unwrap_or(false);
                handles.push(tokio::spawn(async move { w.call_unless(&CancellationToken::new(), job).await }));
            }
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            let own = worker.clone();
            let server_own = tokio::spawn(async move { own.call(|_| 3).await });
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            let refused = worker.call_unless(&CancellationToken::new(), |_| 1).await;
            (refused, handles, server_own)
        });
        assert!(refused.unwrap_err().to_string().contains("requests queued or running"));
        for _ in 0..MAX_IN_FLIGHT {
            release.send(()).unwrap();
        }
        runtime.block_on(async {
            for handle in handles {
                assert!(handle.await.unwrap().unwrap());
            }
            assert_eq!(server_own.await.unwrap().unwrap(), 3, "the server's own call (the tick) is never refused");
        });
        assert_eq!(runtime.block_on(worker.call(|_| 2)).unwrap(), 2, "taken again once answered");
    }
}
