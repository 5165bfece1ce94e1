package embedded

// CertainCommits reports true unless Config.Faults injects
// commit_unknown_result: every other commit of this engine is known to
// have applied or not. (A failed log write on file: reports 1021 joined
// with ErrFailed, which OnError never retries: the database is failed.)
// It implements kv.CertainCommits.
func (d *DB) CertainCommits() bool {
	f := d.s.faults
	return f == nil || (f.f.UnknownApplied == 0 && f.f.UnknownNotApplied == 0)
}
