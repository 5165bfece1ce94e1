-- Meta-commands work in scripts too, each on a line of its own.
CREATE TABLE tasks (
  priority INT NOT NULL,
  cpu INT NOT NULL,
  mem INT NOT NULL,
  name TEXT,
  INDEX fit (cpu, mem)
);
\copy tasks FROM 'testdata/tasks.csv'
-- One task leased (hidden for an hour), one delayed: \d counts them apart.
SELECT name FROM tasks WHERE cpu <= 4 AND mem <= 1024 ORDER BY priority LIMIT 1 FOR LEASE 3600;
INSERT INTO tasks (priority, cpu, mem, name, _visible_at) VALUES (7, 1, 1, 'later', NOW() + INTERVAL 1 HOUR);
\dt
\d tasks
SELECT name FROM tasks WHERE cpu <= 4 AND mem <= 1024 ORDER BY priority DESC LIMIT 1 FOR POP;
-- SHOW returns rows, as SELECT does.
CREATE TABLE reports (name TEXT);
CREATE SCHEDULE nightly ON reports EVERY 1 DAY STARTING '2100-01-01 00:00:00' INSERT (name) VALUES ('daily');
SHOW SCHEDULES;
\q
SELECT 'never reached';
