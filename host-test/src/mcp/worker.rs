//! The plugin on a thread of its own. Its calls are synchronous and its store is not shared, so
//! the async server sends each call here as a closure and awaits the answer; calls run one at a
//! time, in the order they arrive (as the plugin requires).

use crate::Plugin;
use anyhow::{Result, anyhow};
use std::sync::mpsc;

type Job = Box<dyn FnOnce(&mut Plugin) + Send>;

#[derive(Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
}

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
        Ok(Worker { jobs })
    }

    /// Runs `f` on the plugin and returns its answer.
    pub async fn call<R: Send + 'static>(&self, f: impl FnOnce(&mut Plugin) -> R + Send + 'static) -> Result<R> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move |plugin| {
                let _ = reply.send(f(plugin));
            }))
            .map_err(|_| anyhow!("the plugin thread has stopped"))?;
        answer.await.map_err(|_| anyhow!("the plugin thread stopped during a call"))
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
