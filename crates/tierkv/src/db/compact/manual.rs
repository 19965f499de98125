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
            // LAB-DB's L0 trees: the immutable tree compacted whole, then the mutable tree
            // made immutable (by the flush thread, the only one that switches) and compacted
            // whole too; then the levels below as for any stage.
            if let Some(l0) = stage.lab() {
                for round in 0..2 {
                    loop {
                        if let Some(e) = &state.bg_error {
                            result = Err(e.duplicate());
                            break 'stages;
                        }
                        let current = state.versions.current();
                        if crate::labdb::l0::roles_of(current.stage(i).trees).immutable == 0 {
                            break;
                        }
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
                                if let Err(e) = r {
                                    result = Err(e);
                                    break 'stages;
                                }
                            }
                            _ => {
                                self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
                            }
                        }
                    }
                    let roles = crate::labdb::l0::roles_of(state.versions.current().stage(i).trees);
                    if round == 1 || l0.mutable_is_empty(roles) {
                        break;
                    }
                    l0.request_switch();
                    loop {
                        self.bg_cv.notify_all();
                        self.bg_cv.wait_for(&mut state, Duration::from_millis(20));
                        if let Some(e) = &state.bg_error {
                            result = Err(e.duplicate());
                            break 'stages;
                        }
                        let now =
                            crate::labdb::l0::roles_of(state.versions.current().stage(i).trees);
                        if now.mutable != roles.mutable {
                            break;
                        }
                    }
                }
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
}
