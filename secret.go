package duet

import (
	"context"
	"regexp"
	"sync"
	"time"
)

// Secret is one of a user's named secrets (a password a case types, an API
// key a request sends), read by the steps of the runs that user executes
// as ${secrets.NAME}, never written in a task. Only its ciphertext is
// stored (AES-256-GCM under the master key, bound to its owner and name);
// a run learns its value as one of the run's secrets, scrubbed from
// everything the run keeps.
type Secret struct {
	User       string    `json:"user"`
	Name       string    `json:"name"`
	Ciphertext []byte    `json:"-"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// MaxSecretBytes bounds the value of a secret.
const MaxSecretBytes = 16 << 10

var secretNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })

// ValidSecretName checks the name of a secret: letters, digits and _, not
// starting with a digit, at most 64 (what ${secrets.NAME} can name).
// Returns INVALID_ARGUMENT.
func ValidSecretName(name string) error {
	if !secretNameRe().MatchString(name) {
		return Errorf(CodeInvalidArgument, "secret name %q: use letters, digits and _ (not starting with a digit), at most 64", name)
	}
	return nil
}

// SecretStore keeps users' secrets, sealed.
type SecretStore interface {
	// SaveSecret creates or replaces s.User's secret s.Name with
	// s.Ciphertext, and fills s with the stored times. Returns
	// INVALID_ARGUMENT.
	SaveSecret(ctx context.Context, s *Secret) (ApplyAction, error)

	// FindSecrets returns user's secrets of the names given that exist
	// (with their ciphertext), in name order.
	FindSecrets(ctx context.Context, user string, names []string) ([]*Secret, error)

	// ListSecrets returns user's secrets, without their ciphertext, in
	// name order.
	ListSecrets(ctx context.Context, user string) ([]*Secret, error)

	// DeleteSecret removes user's secret name. Returns NOT_FOUND.
	DeleteSecret(ctx context.Context, user, name string) error

	// RewrapSecrets replaces, in one transaction, the ciphertext of every
	// stored secret for which rewrap returns a new one (nil keeps it), and
	// returns how many it replaced of how many there are. An error of
	// rewrap changes nothing.
	RewrapSecrets(ctx context.Context, rewrap func(s *Secret) ([]byte, error)) (replaced, total int, err error)
}
