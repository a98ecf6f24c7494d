package compiler

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/step"
)

// Data-driven cases: a case with each: is one case per row of its data —
// inline rows, or a CSV or JSON file of the suite's folder — each named
// from its row, with its own key, executions and verdict.

// Bounds of a data-driven case.
const (
	// MaxEachRows bounds the rows of one case's data.
	MaxEachRows = 1000
	// MaxEachFileBytes bounds a data file.
	MaxEachFileBytes = 1 << 20
)

// rows reads the data of each: — a list of rows (mappings), or {file:
// PATH} of a .csv (a header line, then one row a line) or .json (a list of
// objects) file of the suite's folder.
func (c *compiler) rows(n *step.Node) []map[string]any {
	var out []map[string]any
	switch n.Type {
	case step.SeqNode:
		for _, it := range n.Items {
			if it.Type != step.MapNode || len(it.Keys) == 0 {
				c.Errf(it, "a row of each: is a mapping of name: value")
				return nil
			}
			out = append(out, it.Plain().(map[string]any))
		}
	case step.MapNode:
		c.AllowKeys(n, "file")
		name := c.String(n, "file", true)
		if name == "" {
			return nil
		}
		out = c.dataFile(n.Get("file"), name)
		if out == nil {
			return nil
		}
	default:
		c.Errf(n, "each must be a list of rows, or {file: PATH} of a CSV or JSON file beside the suite")
		return nil
	}
	if len(out) == 0 {
		c.Errf(n, "each has no rows")
		return nil
	}
	if len(out) > MaxEachRows {
		c.Errf(n, "each has %d rows; a case may have at most %d", len(out), MaxEachRows)
		return nil
	}
	return out
}

// dataFile reads a data file of the suite's folder.
func (c *compiler) dataFile(n *step.Node, name string) []map[string]any {
	if c.opts.Files == nil {
		c.Errf(n, "each: file %s: this suite was compiled without its folder (send the rows inline, or apply the suite file with duet apply)", name)
		return nil
	}
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if !fs.ValidPath(clean) {
		c.Errf(n, "each: file %q must be a relative path inside the suite's folder", name)
		return nil
	}
	f, err := c.opts.Files.Open(clean)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			c.Errf(n, "each: file %s does not exist in the suite's folder", name)
		} else {
			c.Errf(n, "each: file %s: cannot read it: %v", name, errors.Unwrap(err))
		}
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEachFileBytes+1))
	if err != nil {
		c.Errf(n, "each: file %s: cannot read it", name)
		return nil
	}
	if len(data) > MaxEachFileBytes {
		c.Errf(n, "each: file %s is larger than %d bytes, the most a data file may be", name, MaxEachFileBytes)
		return nil
	}
	switch strings.ToLower(path.Ext(clean)) {
	case ".csv":
		return c.csvRows(n, name, data)
	case ".json", ".yaml", ".yml":
		root, d := step.Parse(data)
		if d != nil {
			c.Errf(n, "each: %s:%d:%d: %s", name, d.Line, d.Col, d.Message)
			return nil
		}
		if root.Type != step.SeqNode {
			c.Errf(n, "each: %s must hold a list of objects (one per row)", name)
			return nil
		}
		var out []map[string]any
		for _, it := range root.Items {
			if it.Type != step.MapNode || len(it.Keys) == 0 {
				c.Errf(n, "each: %s:%d:%d: a row is an object of name: value", name, it.Line, it.Col)
				return nil
			}
			out = append(out, it.Plain().(map[string]any))
		}
		return out
	}
	c.Errf(n, "each: file %s: the data file must be .csv or .json", name)
	return nil
}

// csvRows reads a CSV file: a header line naming the columns, then rows.
func (c *compiler) csvRows(n *step.Node, name string, data []byte) []map[string]any {
	r := csv.NewReader(bytes.NewReader(data))
	header, err := r.Read()
	if err != nil {
		c.Errf(n, "each: %s: %s", name, csvError(err, "the header line naming the columns"))
		return nil
	}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" || slices.Contains(header[:i], h) {
			c.Errf(n, "each: %s: column %d of the header is empty or repeated", name, i+1)
			return nil
		}
		header[i] = h
	}
	var out []map[string]any
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.Errf(n, "each: %s: %s", name, csvError(err, ""))
			return nil
		}
		row := make(map[string]any, len(header))
		for i, h := range header {
			row[h] = rec[i]
		}
		out = append(out, row)
		if len(out) > MaxEachRows {
			break
		}
	}
	return out
}

func csvError(err error, what string) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	if errors.Is(err, io.EOF) && what != "" {
		return "the file is empty; it needs " + what
	}
	return err.Error()
}

// rowCases makes one case of cs per row: the title (and the key, when it
// is a template) rendered over the row, the row kept for the steps.
func (c *compiler) rowCases(n *step.Node, cs *duet.Case, keyGiven bool, rows []map[string]any) []*duet.Case {
	titleNode := n.Get("title")
	if !eval.IsTemplate(cs.Title) && !(keyGiven && eval.IsTemplate(cs.Key)) && len(rows) > 1 {
		c.Errf(titleNode, "each row is a case of its own, named from its row: write ${row.NAME} in the title (login as ${row.user})")
		return nil
	}
	seen := map[string]int{}
	var out []*duet.Case
	for i, row := range rows {
		vars := map[string]any{"row": row}
		title, err := eval.RenderString(cs.Title, vars)
		if err != nil {
			c.Errf(titleNode, "title of row %d: %v", i+1, err)
			return nil
		}
		title = strings.TrimSpace(title)
		key := slug(title)
		if keyGiven {
			if key, err = eval.RenderString(cs.Key, vars); err != nil {
				c.Errf(n.Get("key"), "key of row %d: %v", i+1, err)
				return nil
			}
			if !eval.IsTemplate(cs.Key) {
				key = fmt.Sprintf("%s-%d", cs.Key, i+1)
			}
		}
		if !keyRe().MatchString(key) {
			c.Errf(titleNode, "row %d makes the key %q, which is not a key (lower-case letters, digits, '.', '_' or '-'): add key: with ${row...}", i+1, key)
			return nil
		}
		if prev, dup := seen[key]; dup {
			c.Errf(titleNode, "rows %d and %d make the same case key %q: each row needs its own title (or key)", prev, i+1, key)
			return nil
		}
		seen[key] = i + 1
		rc := *cs
		rc.Title, rc.Key, rc.Row = title, key, row
		rc.Steps = slices.Clone(cs.Steps)
		out = append(out, &rc)
	}
	return out
}
