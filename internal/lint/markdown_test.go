package lint

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Just enough Markdown for the documentation tests: fenced code blocks,
// inline code spans, links and headings, as GitHub renders them.

// markdown is a document cut into what the tests look at.
type markdown struct {
	spans   []string // inline code spans' contents, outside code blocks
	blocks  []string // fenced code blocks' contents
	links   []string // link targets, outside code
	anchors map[string]bool
}

var (
	fence       = regexp.MustCompile("^\\s*(```|~~~)")
	heading     = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLink  = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink     = regexp.MustCompile(`^\s*\[[^\]]+\]:\s+(\S+)`)
	linkText    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	codeSpanRun = regexp.MustCompile("`+")
)

func parseMarkdown(text string) *markdown {
	m := &markdown{anchors: map[string]bool{}}
	seen := map[string]int{}
	var block []string
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			if inBlock {
				m.blocks = append(m.blocks, strings.Join(block, "\n"))
				block = nil
			}
			inBlock = !inBlock
			continue
		}
		if inBlock {
			block = append(block, line)
			continue
		}
		if h := heading.FindStringSubmatch(line); h != nil {
			s := slug(h[2])
			if n := seen[s]; n > 0 {
				m.anchors[s+"-"+strconv.Itoa(n)] = true
			} else {
				m.anchors[s] = true
			}
			seen[s]++
		}
		rest, spans := cutCodeSpans(line)
		m.spans = append(m.spans, spans...)
		for _, l := range inlineLink.FindAllStringSubmatch(rest, -1) {
			m.links = append(m.links, l[1])
		}
		if l := refLink.FindStringSubmatch(rest); l != nil {
			m.links = append(m.links, l[1])
		}
	}
	return m
}

// cutCodeSpans returns a line without its inline code spans, and the
// spans' contents. A span opens with a run of backticks and closes with a
// run of the same length; its content is trimmed of one space each side.
func cutCodeSpans(line string) (string, []string) {
	var out strings.Builder
	var spans []string
	for {
		open := codeSpanRun.FindStringIndex(line)
		if open == nil {
			out.WriteString(line)
			return out.String(), spans
		}
		n := open[1] - open[0]
		after := line[open[1]:]
		end := -1
		for _, c := range codeSpanRun.FindAllStringIndex(after, -1) {
			if c[1]-c[0] == n {
				end = c[0]
				break
			}
		}
		if end < 0 { // no closing run: the backticks are text
			out.WriteString(line[:open[1]])
			line = after
			continue
		}
		out.WriteString(line[:open[0]])
		out.WriteString(" ")
		content := after[:end]
		if len(content) > 1 && content[0] == ' ' && content[len(content)-1] == ' ' {
			content = content[1 : len(content)-1]
		}
		spans = append(spans, content)
		line = after[end+n:]
	}
}

// slug is the anchor GitHub gives a heading: its text (links and code as
// their text), lower-cased, without punctuation but hyphens and
// underscores, spaces made hyphens.
func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
