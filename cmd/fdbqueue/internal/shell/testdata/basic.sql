-- comments; with semicolons; are ignored
CREATE TABLE q (priority INT NOT NULL, name TEXT, data BLOB, ok BOOLEAN);
INSERT INTO q VALUES (1, 'semi;colon', x'00ff', true), (2, 'it''s', 'text blob', NULL);
/* a block comment; also ignored */
SELECT priority, name, data, ok
  FROM q ORDER BY priority DESC;
SELECT name FROM q WHERE priority > 5 LIMIT 1;
SELECT COUNT(*) FROM q
