-- Every type, and the values that are hard to print: infinities, -0,
-- integers past 2^53, NULL against the empty string, blobs that are not
-- text (and one that looks like hex), text with commas, quotes, line breaks.
CREATE TABLE v (priority INT NOT NULL, i BIGINT, f DOUBLE, s TEXT, b BLOB, ok BOOLEAN, ts TIMESTAMP);
INSERT INTO v VALUES
  (1, 9007199254740992, 'Infinity', 'a,b "c"', x'00ff41', true, '2026-11-22T10:00:00.5Z'),
  (2, 9007199254740993, '1e-300', '', '', false, '1970-01-01T00:00:00Z'),
  (3, -9223372036854775808, '-Infinity', 'two
lines', '\\x41', NULL, NULL),
  (4, 9223372036854775807, '-0', '\\.', 'text', NULL, NULL),
  (5, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT priority, i, f, s, b, ok, ts FROM v ORDER BY priority;
SELECT f FROM v ORDER BY priority LIMIT 1 FOR POP;
