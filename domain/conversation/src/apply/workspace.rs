//! Runs taking and giving back the workspace.

use super::Step;
use crate::{Rejection, Workspace};

impl Step<'_> {
    pub(super) fn run_took(&mut self, run: String) -> Result<(), Rejection> {
        match &self.state.workspace {
            Workspace::Turn { seq } => Err(Rejection::TurnHoldsWorkspace { seq: *seq }),
            Workspace::Run { run: holder } if *holder == run => Ok(()),
            Workspace::Run { run: holder } => Err(Rejection::RunHoldsWorkspace {
                run: holder.clone(),
            }),
            Workspace::None | Workspace::Kept | Workspace::Released => {
                self.state.workspace = Workspace::Run { run };
                Ok(())
            }
        }
    }

    pub(super) fn run_released(&mut self, run: String) -> Result<(), Rejection> {
        let repeated = self.state.last_run.as_deref() == Some(run.as_str());
        match &self.state.workspace {
            Workspace::Run { run: holder } if *holder == run => {}
            _ if repeated => return Ok(()),
            Workspace::Turn { seq } => return Err(Rejection::TurnHoldsWorkspace { seq: *seq }),
            Workspace::Run { run: holder } => {
                return Err(Rejection::RunHoldsWorkspace {
                    run: holder.clone(),
                });
            }
            // `take over`: the run's workspace becomes the conversation's.
            Workspace::None | Workspace::Kept | Workspace::Released => {}
        }
        self.state.last_run = Some(run.clone());
        self.state.adopt = Some(run);
        self.free();
        Ok(())
    }
}
