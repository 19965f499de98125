//! Manual compaction (`Db::compact_range`): each stage's compactions over a key range, walked
//! down the pipeline.

use super::*;

impl DbInner {
    /// Compacts `[begin, end]` through every stage in pipeline order, each stage's policy
    /// saying which groups a manual compaction walks (the leveled policy: level by level, down
    /// to the deepest level holding keys of the range, as LevelDB's `CompactRange`).
    pub(crate) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let mut state = self.state.lock();
        state.manual_compactions += 1;
        let mut result = Ok(());
        'stages: for (i, stage) in self.stages.iter().enumerate() {
            // The stage's own steps first (its `manual_step`), then the groups the policy
            // names.
            let r;
            (state, r) = self.manual_stage_steps(state, i);
            if let Err(e) = r {
                result = Err(e);
                break 'stages;
            }
            let current = state.versions.current();
            let groups = stage.policy().manual_groups(
                &PolicyView {
                    stage: i,
                    state: current.stage(i),
                    busy: &state.busy[i],
                    pointers: &state.versions.pointers[i],
                },
                begin,
                end,
            );
            for group in groups {
                // Wait until the task's groups are free, then take them.
                let task = loop {
                    if let Some(e) = &state.bg_error {
                        result = Err(e.duplicate());
                        break 'stages;
                    }
                    let current = state.versions.current();
                    let view = PolicyView {
                        stage: i,
                        state: current.stage(i),
                        busy: &state.busy[i],
                        pointers: &state.versions.pointers[i],
                    };
                    let task = stage.policy().manual(&view, group, begin, end);
                    match &task {
                        Some(t) if t.groups().iter().any(|&g| state.busy[i][g]) => {}
                        _ => break task,
                    }
                    self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
                };
                if let Some(task) = task {
                    set_busy(&mut state, &task, true);
                    drop(state);
                    let r = self.run_task(task);
                    state = self.state.lock();
                    if let Err(e) = r {
                        result = Err(e);
                        break 'stages;
                    }
                }
            }
        }
        state.manual_compactions -= 1;
        self.bg_cv.notify_all();
        result
    }

    /// Stage `i`'s own steps of a manual compaction ([`crate::pipeline::Stage::manual_step`]),
    /// run until the stage says its groups come next; takes and gives back the state lock.
    fn manual_stage_steps<'a>(
        &'a self,
        mut state: parking_lot::MutexGuard<'a, super::super::State>,
        i: usize,
    ) -> (parking_lot::MutexGuard<'a, super::super::State>, Result<()>) {
        let stage = &self.stages[i];
        let mut progress = ManualProgress::default();
        loop {
            if let Some(e) = &state.bg_error {
                let e = e.duplicate();
                return (state, Err(e));
            }
            let current = state.versions.current();
            match stage.manual_step(current.stage(i), &mut progress) {
                ManualStep::Groups => return (state, Ok(())),
                ManualStep::Wait => {
                    self.bg_cv.notify_all();
                    self.bg_cv.wait_for(&mut state, Duration::from_millis(20));
                }
                ManualStep::Compact => {
                    let view = PolicyView {
                        stage: i,
                        state: current.stage(i),
                        busy: &state.busy[i],
                        pointers: &state.versions.pointers[i],
                    };
                    match stage.policy().manual(&view, 0, None, None) {
                        Some(task) if !task.groups().iter().any(|&g| state.busy[i][g]) => {
                            set_busy(&mut state, &task, true);
                            drop(state);
                            let r = self.run_task(task);
                            state = self.state.lock();
                            if r.is_err() {
                                return (state, r);
                            }
                        }
                        _ => {
                            self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
                        }
                    }
                }
            }
        }
    }
}
