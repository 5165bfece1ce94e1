-- Meta-commands work in scripts too, each on a line of its own.
CREATE TABLE tasks (
  priority INT NOT NULL,
  cpu INT NOT NULL,
  mem INT NOT NULL,
  name TEXT,
  INDEX fit (cpu, mem)
);
\copy tasks FROM 'testdata/tasks.csv'
\dt
\d tasks
SELECT name FROM tasks WHERE cpu <= 4 AND mem <= 1024 ORDER BY priority DESC LIMIT 1 FOR POP;
\q
SELECT 'never reached';
