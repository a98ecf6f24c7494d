package step

import (
	"context"
	"io/fs"
	"mime"
	"path"

	"github.com/duet-test/duet"
)

// Bounds of an upload step's files, read when the suite compiles and
// kept with the step.
const (
	maxUploadBytes = 4 << 20
	maxUploadFiles = 20
)

var uploadForm = elementForm("", Key{Name: "files", Type: uploadFiles, Required: true,
	Doc: "a file of the suite's folder (a path relative to it), a list of them, or {name, content} with the text of a file"})

// Upload is the upload step.
var Upload = register(&Kind{
	Name:    "upload",
	Section: Browser,
	Order:   152,
	Summary: "Set the files of a file input (`<input type=file>`, hidden ones too): files of the suite's folder, read when the suite compiles (4 MiB together at most), or a text given in the step.",
	Form:    uploadForm,
	Example: "- upload: {label: Receipt, files: {name: receipt.txt, content: \"Order A1001, paid\"}}\n",
	Doc: "A path names a file of the suite's folder (`duet apply -f` reads it, with the suite); " +
		"a suite sent over the API or written by the agent has no folder, so its uploads give the content. " +
		"The files go into the page as the browser's own File objects, on every kind of browser (local, remote, phones).",
	Agent: "`upload: {label: \"Receipt\", files: {name: receipt.txt, content: \"...\"}}` (or files of the suite's folder: `files: [photo.png]`)",
	Compile: elementStep(&uploadForm, func(c *Compiler, n *Node, bd *body) {
		fn := n.Get("files")
		if fn == nil {
			c.Errf(n, "missing key files")
			return
		}
		items := []*Node{fn}
		if fn.Type == SeqNode {
			items = fn.Items
		}
		if len(items) == 0 || len(items) > maxUploadFiles {
			c.Errf(fn, "files: between 1 and %d files", maxUploadFiles)
			return
		}
		total := 0
		for _, it := range items {
			f, ok := c.uploadFile(it)
			if !ok {
				continue
			}
			total += len(f.Data)
			if total > maxUploadBytes {
				c.Errf(it, "files: the files are more than %d bytes together, the bound of an upload", maxUploadBytes)
				return
			}
			bd.b.Files = append(bd.b.Files, f)
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if _, _, err := elements(ctx, env, st); err != nil {
			return "", nil, err
		}
		total := 0
		for _, f := range st.Browser.Files {
			total += len(f.Data)
		}
		if total > maxUploadBytes || len(st.Browser.Files) > maxUploadFiles {
			return "", nil, duet.Errorf(duet.CodeTooLarge, "upload: %d files of %d bytes together, over the bound of %d files and %d bytes", len(st.Browser.Files), total, maxUploadFiles, maxUploadBytes)
		}
		return act(ctx, env, st, Action{Kind: "upload", Files: st.Browser.Files})
	},
})

// uploadFile reads one file of an upload: a path in the suite's folder,
// or {name, content, type}.
func (c *Compiler) uploadFile(n *Node) (duet.UploadFile, bool) {
	if p, ok := n.Str(); ok {
		if c.Files == nil {
			c.Errf(n, "files: %q is a file of the suite's folder, which this suite has not (apply it with duet apply -f FILE, or give {name, content})", p)
			return duet.UploadFile{}, false
		}
		if !fs.ValidPath(p) || p == "." {
			c.Errf(n, "files: %q must be a path inside the suite's folder (no leading /, no ..)", p)
			return duet.UploadFile{}, false
		}
		info, err := fs.Stat(c.Files, p)
		switch {
		case err != nil:
			c.Errf(n, "files: cannot read %s in the suite's folder: %v", p, errorsUnwrap(err))
			return duet.UploadFile{}, false
		case !info.Mode().IsRegular():
			c.Errf(n, "files: %s is not a file", p)
			return duet.UploadFile{}, false
		case info.Size() > maxUploadBytes:
			c.Errf(n, "files: %s has %d bytes, more than the %d of an upload", p, info.Size(), maxUploadBytes)
			return duet.UploadFile{}, false
		}
		data, err := fs.ReadFile(c.Files, p)
		if err != nil {
			c.Errf(n, "files: cannot read %s: %v", p, errorsUnwrap(err))
			return duet.UploadFile{}, false
		}
		return duet.UploadFile{Name: path.Base(p), Type: mime.TypeByExtension(path.Ext(p)), Data: data}, true
	}
	if !c.mapping(n, "files: a path of the suite's folder, or {name, content}", "name", "content", "type") {
		return duet.UploadFile{}, false
	}
	f := duet.UploadFile{Name: c.String(n, "name", true), Type: c.String(n, "type", false)}
	content := c.String(n, "content", true)
	if len(content) > maxUploadBytes {
		c.Errf(n.Get("content"), "files: the content is more than %d bytes", maxUploadBytes)
		return duet.UploadFile{}, false
	}
	f.Data = []byte(content)
	if f.Type == "" {
		f.Type = mime.TypeByExtension(path.Ext(f.Name))
	}
	return f, f.Name != ""
}
