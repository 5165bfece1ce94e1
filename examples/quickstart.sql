-- fdbqueue quickstart: run it with
--   go run ./cmd/fdbqueue -f examples/quickstart.sql
-- Every statement is a transaction with FoundationDB's semantics.

-- 1. A FIFO queue: a table without a priority column.
CREATE TABLE emails (recipient TEXT NOT NULL, subject TEXT);
INSERT INTO emails (recipient, subject) VALUES
  ('ada@example.com', 'Welcome'),
  ('alan@example.com', 'Your invoice'),
  ('grace@example.com', 'Password reset');
-- Peek at the head without removing anything:
SELECT recipient, subject FROM emails LIMIT 2;
-- FOR POP removes what it returns, in the same transaction: oldest first.
SELECT recipient, subject FROM emails LIMIT 2 FOR POP;
SELECT COUNT(*) FROM emails;

-- 2. A priority queue: a column named priority. Served from either end,
--    oldest first within one priority.
CREATE TABLE alerts (priority INT NOT NULL, message TEXT NOT NULL);
INSERT INTO alerts (priority, message) VALUES
  (3, 'disk 80% full'), (9, 'site down'), (1, 'certificate expires in 30 days'),
  (9, 'database unreachable'), (5, 'latency up');
SELECT priority, message FROM alerts ORDER BY priority DESC LIMIT 1 FOR POP;  -- pop max
SELECT priority, message FROM alerts ORDER BY priority ASC LIMIT 1 FOR POP;   -- pop min
SELECT priority, message FROM alerts ORDER BY priority DESC;                  -- what is left

-- 3. A task queue: INDEX (cpu, mem) names the resources. A worker pops the
--    highest-priority task that fits what it has, through the fit index.
CREATE TABLE tasks (
  priority INT NOT NULL,
  cpu      INT NOT NULL,
  mem      INT NOT NULL,
  name     TEXT NOT NULL,
  INDEX fit (cpu, mem)
);
INSERT INTO tasks (priority, cpu, mem, name) VALUES
  (10, 16, 65536, 'train model'),
  (10,  2,  4096, 'transcode video'),
  ( 5,  1,   512, 'send report'),
  (10,  1,  1024, 'resize images'),
  ( 1,  8, 16384, 'rebuild index');
-- A small worker (2 cpu, 4 GB): the best task that fits, oldest first.
SELECT name, priority, cpu, mem FROM tasks WHERE cpu <= 2 AND mem <= 4096 ORDER BY priority DESC LIMIT 1 FOR POP;
SELECT name, priority, cpu, mem FROM tasks WHERE cpu <= 2 AND mem <= 4096 ORDER BY priority DESC LIMIT 1 FOR POP;
SELECT name, priority, cpu, mem FROM tasks WHERE cpu <= 2 AND mem <= 4096 ORDER BY priority DESC LIMIT 1 FOR POP;
-- Nothing else fits the small worker:
SELECT name FROM tasks WHERE cpu <= 2 AND mem <= 4096 ORDER BY priority DESC LIMIT 1 FOR POP;
-- A big worker takes the rest, highest priority first.
SELECT name, priority FROM tasks WHERE cpu <= 64 AND mem <= 262144 ORDER BY priority DESC LIMIT 10 FOR POP;

-- 4. Bulk load and look around. Meta-commands (one per line) work in
--    scripts and at the prompt: \copy loads a CSV file whose header names
--    the columns, in batches that are each one exactly-once transaction.
\copy tasks FROM 'examples/tasks.csv'
\dt
\d tasks
SELECT name, priority FROM tasks WHERE cpu <= 4 AND mem <= 8192 ORDER BY priority DESC LIMIT 2 FOR POP;
