-- Work branches pushed to a repository that is not on GitHub: to a git remote alone (for
-- someone to merge there), or to a forge with the merge request (pull request) opened
-- from it.
CREATE TABLE pushed_branches (
    run_id         BLOB        NOT NULL,
    repo           TEXT        NOT NULL,
    requirement_id BLOB,
    branch         TEXT        NOT NULL,
    commit_sha     TEXT        NOT NULL,
    -- the remote pushed to, as shown (no user name)
    remote         TEXT        NOT NULL,
    -- the forge (`[forges.NAME]`) and the merge request opened there, if any
    forge          TEXT,
    request_number INTEGER,
    request_url    TEXT,
    created_at     TEXT        NOT NULL,
    PRIMARY KEY (run_id, repo)
);
CREATE INDEX pushed_branches_requirement ON pushed_branches (requirement_id);
