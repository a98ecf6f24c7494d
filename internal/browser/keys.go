package browser

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/duet-test/duet"
)

// keyAliases are other spellings of key names that people write.
var keyAliases = map[string]string{
	"esc":    "Escape",
	"return": "Enter",
	"del":    "Delete",
	"space":  " ",
	"up":     "ArrowUp",
	"down":   "ArrowDown",
	"left":   "ArrowLeft",
	"right":  "ArrowRight",
}

// modifierNames maps the lower-case names of modifier keys.
var modifierNames = map[string]chromedp.Modifier{
	"shift":   chromedp.ModifierShift,
	"control": chromedp.ModifierCtrl,
	"ctrl":    chromedp.ModifierCtrl,
	"alt":     chromedp.ModifierAlt,
	"option":  chromedp.ModifierAlt,
	"meta":    chromedp.ModifierMeta,
	"cmd":     chromedp.ModifierMeta,
	"command": chromedp.ModifierMeta,
}

// namedKeys maps the lower-case DOM key names ("enter", "arrowdown") to the
// runes of package kb that encode them.
var namedKeys = sync.OnceValue(func() map[string]rune {
	m := make(map[string]rune)
	for r, k := range kb.Keys {
		if utf8.RuneCountInString(k.Key) < 2 {
			continue // a printable character, typed as itself
		}
		name := strings.ToLower(k.Key)
		if old, ok := m[name]; !ok || r < old {
			m[name] = r
		}
	}
	return m
})

// parseKey turns a key such as "Enter", "ArrowDown", "a" or "Shift+Tab" into
// the text that chromedp.KeyEvent encodes and the modifiers to hold. It
// returns CodeInvalidArgument for an unknown key.
func parseKey(key string) (string, []chromedp.Modifier, error) {
	if key == "" {
		return "", nil, duet.Errorf(duet.CodeInvalidArgument, "key is empty")
	}
	var mods []chromedp.Modifier
	name := key
	// "+" alone, or a trailing "+" as in "Shift++", is the plus key.
	for {
		i := strings.Index(name, "+")
		if i <= 0 || i == len(name)-1 {
			break
		}
		m, ok := modifierNames[strings.ToLower(name[:i])]
		if !ok {
			return "", nil, duet.Errorf(duet.CodeInvalidArgument,
				"key %q: unknown modifier %q (want Shift, Control, Alt or Meta)", key, name[:i])
		}
		mods = append(mods, m)
		name = name[i+1:]
	}
	if utf8.RuneCountInString(name) == 1 {
		if len(name) == 1 && name[0] >= 'A' && name[0] <= 'Z' && slices.ContainsFunc(mods, func(m chromedp.Modifier) bool { return m != chromedp.ModifierShift }) {
			// A shortcut names its key: Control+A is Control with the A
			// key, not with a capital A (Shift+A).
			name = strings.ToLower(name)
		}
		return name, mods, nil
	}
	lower := strings.ToLower(name)
	if alias, ok := keyAliases[lower]; ok {
		if utf8.RuneCountInString(alias) == 1 {
			return alias, mods, nil
		}
		lower = strings.ToLower(alias)
	}
	if r, ok := namedKeys()[lower]; ok {
		return string(r), mods, nil
	}
	return "", nil, duet.Errorf(duet.CodeInvalidArgument,
		"unknown key %q: want a single character or a key name such as Enter, Tab, Escape, Backspace, ArrowDown, Home or PageDown", key)
}
