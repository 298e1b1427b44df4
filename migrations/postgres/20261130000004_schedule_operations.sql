-- Schedules operated from the API and CLI: jitter, a start/end window, a due-time index so
-- the scheduler reads only the schedules that are due (100,000 schedules cost nothing
-- between their fires), a revision for compare-and-set, and fires that were triggered by
-- hand or backfilled.

ALTER TABLE schedules ADD COLUMN jitter_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN starts_ms BIGINT;
ALTER TABLE schedules ADD COLUMN ends_ms BIGINT;
-- When the next fire is due (epoch ms, jitter included); 0 = not computed yet (a new or
-- changed schedule), NULL = the schedule has ended.
ALTER TABLE schedules ADD COLUMN next_due_ms BIGINT DEFAULT 0;
ALTER TABLE schedules ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX schedules_due ON schedules (next_due_ms) WHERE NOT paused;

-- cron (the scheduler's own), manual (`schedule trigger`) or backfill.
ALTER TABLE schedule_fires ADD COLUMN kind TEXT NOT NULL DEFAULT 'cron';
-- Fires waiting for the scheduler: triggered by hand, or buffered behind a running run.
CREATE INDEX schedule_fires_waiting ON schedule_fires (schedule)
    WHERE outcome IN ('requested', 'buffered');

-- Runs link back to the schedule fire that started them (kept when the schedule is deleted).
ALTER TABLE runs ADD COLUMN schedule TEXT;
ALTER TABLE runs ADD COLUMN scheduled_ms BIGINT;
