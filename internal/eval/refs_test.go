package eval

import (
	"strings"
	"testing"
)

// TestSecretNames: the secrets an expression or a template reads by name;
// any other reading of secrets is an error.
func TestSecretNames(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`secrets.API_KEY`:                        "API_KEY",
		`secrets["B"] + secrets.A + secrets.A`:   "A B",
		`"secrets.X" + user.secrets`:             "",
		`len(secrets.P) > 3 && task.name == "x"`: "P",
		`not an expression (`:                    "",
		`let secrets = 1; secrets`:               "error",
		`secrets[name]`:                          "error",
		`keys(secrets)`:                          "error",
		`secrets?.X`:                             "X",
	} {
		got, err := SecretNames(src)
		g := strings.Join(got, " ")
		if err != nil {
			g = "error"
		}
		if g != want {
			t.Errorf("SecretNames(%s): got %q (%v), want %q", src, g, err, want)
		}
	}
	got, err := TemplateSecretNames("Bearer ${secrets.TOKEN} for ${user} $${secrets.NOT}")
	if err != nil || strings.Join(got, " ") != "TOKEN" {
		t.Errorf("TemplateSecretNames: got %v %v", got, err)
	}
}
