package parser

// CREATE TABLE's table options, which the pre-pass reads after the
// columns' closing parenthesis and takes out of the text sqlparser reads:
// MAX_ATTEMPTS=n and BACKOFF=EXPONENTIAL(first, max) | CONSTANT(delay), in
// any order, separated by blanks or commas, each at most once.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// Backoff is the BACKOFF table option: how long a row waits, hidden, after
// a lease of it ends with neither an ack nor a release, or after a release
// that gives no time, before it can be leased again. The n-th attempt's
// delay is First·2^(n-1), at most Max, for EXPONENTIAL; First, for
// CONSTANT (Max is then First). exec takes up to a quarter off each delay,
// as jitter.
type Backoff struct {
	Exponential bool
	First, Max  time.Duration
}

// The range of a BACKOFF's durations. A delay under a millisecond is no
// backoff, and one over 30 days is more likely a wrong unit than meant (a
// delay that long belongs in a delayed INSERT).
const (
	MinBackoff = time.Millisecond
	MaxBackoff = 30 * 24 * time.Hour
)

// backoffHint says what BACKOFF takes, for errors.
const backoffHint = "a backoff is BACKOFF=EXPONENTIAL(first, max) or BACKOFF=CONSTANT(delay), each duration n SECOND, n MINUTE or n HOUR (n a number, fractions allowed) from 1 millisecond to 30 days, as in BACKOFF=EXPONENTIAL(1 SECOND, 1 HOUR)"

// optionsHint names the table options, for errors.
const optionsHint = "the table options are MAX_ATTEMPTS=n and BACKOFF=EXPONENTIAL(first, max) or BACKOFF=CONSTANT(delay)"

// String returns the option's value as CREATE TABLE takes it:
// EXPONENTIAL(1 SECOND, 1 HOUR), CONSTANT(30 SECOND).
func (b Backoff) String() string {
	if b.Exponential {
		return fmt.Sprintf("EXPONENTIAL(%s, %s)", durationText(b.First), durationText(b.Max))
	}
	return fmt.Sprintf("CONSTANT(%s)", durationText(b.First))
}

// Check reports a backoff out of range: a duration outside MinBackoff to
// MaxBackoff, or a first delay longer than the longest.
func (b Backoff) Check() error {
	for _, d := range []time.Duration{b.First, b.Max} {
		if d < MinBackoff || d > MaxBackoff {
			return fmt.Errorf("%w: BACKOFF=%s: %s lasts from 1 millisecond to 30 days (%s)", ErrValue, b, durationText(d), backoffHint)
		}
	}
	if b.First > b.Max {
		return fmt.Errorf("%w: BACKOFF=%s: the first delay is longer than the longest; EXPONENTIAL(first, max) doubles first up to max", ErrValue, b)
	}
	if !b.Exponential && b.First != b.Max {
		return fmt.Errorf("%w: BACKOFF=%s: a constant backoff has one delay", ErrValue, b)
	}
	return nil
}

// durationText writes d in the largest unit that holds it exactly: 1 HOUR,
// 90 MINUTE, 0.25 SECOND.
func durationText(d time.Duration) string {
	switch {
	case d != 0 && d%time.Hour == 0:
		return fmt.Sprintf("%d HOUR", d/time.Hour)
	case d != 0 && d%time.Minute == 0:
		return fmt.Sprintf("%d MINUTE", d/time.Minute)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " SECOND"
}

// tableOptions reads the table options after the columns' closing
// parenthesis of a CREATE TABLE, sets pp.maxAttempts and pp.backoff, and
// drops them from the text sqlparser reads (which refuses some of the
// values it should explain). Anything else there is left to sqlparser,
// whose table options convert refuses by name; after one of ours it is
// refused here.
func (pp *prepass) tableOptions(sql string, tokAt func(int) token, code []int, n int, drop map[int]bool) error {
	k, depth := 0, 0
	for ; k < n; k++ {
		switch tokAt(k).typ {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 && tokAt(k).typ == ')' {
			break
		}
	}
	if k >= n {
		return nil // no columns: sqlparser says so
	}
	seen := map[string]bool{}
	for k++; k < n; {
		if tokAt(k).typ == ',' && len(seen) > 0 {
			if k+1 == n {
				return unsupported("a comma after the last table option (%s)", optionsHint)
			}
			drop[code[k]] = true
			k++
			continue
		}
		name := strings.ToLower(tokAt(k).val)
		if tokAt(k).typ != sqlparser.ID || name != "max_attempts" && name != "backoff" {
			// Another option: sqlparser refuses it by name, unless ours
			// follow (which it cannot read).
			last := n - 1
			for j := k; j < n && len(seen) == 0; j++ {
				if w := strings.ToLower(tokAt(j).val); tokAt(j).typ == sqlparser.ID && (w == "max_attempts" || w == "backoff") {
					seen[w], last = true, j-1
				}
			}
			if len(seen) > 0 {
				return unsupported("table option %s (%s)", strings.TrimSpace(sql[tokAt(k).start:tokAt(last).end]), optionsHint)
			}
			return nil
		}
		if seen[name] {
			return unsupported("%s is given twice", strings.ToUpper(name))
		}
		seen[name] = true
		end, err := pp.tableOption(sql, tokAt, k, n, name)
		if err != nil {
			return err
		}
		for j := k; j < end; j++ {
			drop[code[j]] = true
		}
		k = end
	}
	return nil
}

// tableOption reads the option name at token k, which ends before n, and
// returns where it ends.
func (pp *prepass) tableOption(sql string, tokAt func(int) token, k, n int, name string) (int, error) {
	from := k + 1
	if tokAt(from).typ == '=' {
		from++
	}
	if name == "max_attempts" {
		if from >= n {
			return 0, unsupported("MAX_ATTEMPTS without a value (how many times a row may be leased: MAX_ATTEMPTS=n, n an integer, 1 or more)")
		}
		end := from + 1
		if tokAt(from).typ == '-' && end < n {
			end++ // the error names the number
		}
		text := strings.TrimSpace(sql[tokAt(from).start:tokAt(end-1).end])
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v <= 0 || tokAt(from).typ != sqlparser.INTEGRAL {
			return 0, unsupported("MAX_ATTEMPTS=%s (how many times a row may be leased: an integer, 1 or more)", text)
		}
		pp.maxAttempts = v
		return end, nil
	}
	// BACKOFF: a policy's name, then its durations in parentheses.
	end := from
	for depth := 0; end < n; end++ {
		if t := tokAt(end).typ; t == '(' {
			depth++
		} else if t == ')' {
			if depth--; depth == 0 {
				end++
				break
			}
		} else if depth == 0 && end > from+1 {
			break // what follows a policy without its parenthesis
		}
	}
	text := "BACKOFF"
	if from < n {
		text += "=" + strings.TrimSpace(sql[tokAt(from).start:tokAt(end-1).end])
	}
	policy := strings.ToLower(tokAt(from).val)
	if from >= n || tokAt(from).typ != sqlparser.ID || policy != "exponential" && policy != "constant" || tokAt(from+1).typ != '(' || tokAt(end-1).typ != ')' {
		return 0, unsupported("%s (%s)", text, backoffHint)
	}
	var ds []time.Duration
	for j := from + 2; j < end-1; {
		d, next, err := backoffDuration(sql, tokAt, j, end-1, text)
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
		if j = next; j < end-1 {
			if tokAt(j).typ != ',' {
				return 0, unsupported("%s: %s after a duration (%s)", text, describeToken(tokAt(j)), backoffHint)
			}
			j++
		}
	}
	b := Backoff{Exponential: policy == "exponential"}
	switch {
	case b.Exponential && len(ds) == 2:
		b.First, b.Max = ds[0], ds[1]
	case !b.Exponential && len(ds) == 1:
		b.First, b.Max = ds[0], ds[0]
	case b.Exponential:
		return 0, unsupported("%s: EXPONENTIAL takes two durations, the first delay and the longest, not %d (%s)", text, len(ds), backoffHint)
	default:
		return 0, unsupported("%s: CONSTANT takes one duration, not %d (%s)", text, len(ds), backoffHint)
	}
	if err := b.Check(); err != nil {
		return 0, err
	}
	pp.backoff = &b
	return end, nil
}

// backoffDuration reads the duration n UNIT at token j (before end) of
// BACKOFF's text, and returns it and where it ends.
func backoffDuration(sql string, tokAt func(int) token, j, end int, text string) (time.Duration, int, error) {
	neg := tokAt(j).typ == '-'
	if neg {
		j++
	}
	num, unit := tokAt(j), tokAt(j+1)
	if j+1 >= end || num.typ != sqlparser.INTEGRAL && num.typ != sqlparser.FLOAT {
		what := "nothing"
		if j < end {
			what = strings.TrimSpace(sql[tokAt(j).start:tokAt(end-1).end])
		}
		return 0, 0, unsupported("%s: %s is not a duration (%s)", text, what, backoffHint)
	}
	per := intervalUnits[strings.ToLower(unit.val)]
	if per == 0 {
		return 0, 0, unsupported("%s: unit %s (a duration's unit is SECOND, MINUTE or HOUR; %s)", text, unit.val, backoffHint)
	}
	n, err := strconv.ParseFloat(num.val, 64)
	if err != nil || neg || n <= 0 || n*float64(per) > float64(math.MaxInt64) {
		sign := ""
		if neg {
			sign = "-"
		}
		return 0, 0, fmt.Errorf("%w: %s: %s%s %s is not a delay; each lasts from 1 millisecond to 30 days (%s)", ErrValue, text, sign, num.val, strings.ToUpper(unit.val), backoffHint)
	}
	return time.Duration(math.Round(n * float64(per))), j + 2, nil
}
