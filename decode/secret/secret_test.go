package secret_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// TestFields: the rule, applied to the schema, finds the credentials the
// protocol carries (a client's, and those a proxy forwards for its
// clients) and no other field; every field of the schema is asked.
func TestFields(t *testing.T) {
	want := []string{
		"pulsarscope.pulsarapi.AuthData.auth_data",
		"pulsarscope.pulsarapi.CommandConnect.auth_data",
		"pulsarscope.pulsarapi.CommandConnect.original_auth_data",
		"pulsarscope.pulsarapi.CommandLookupTopic.original_auth_data",
		"pulsarscope.pulsarapi.CommandPartitionedTopicMetadata.original_auth_data",
	}
	if got := secret.Fields(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("secret fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	msgs := pulsarapi.File_pulsar_api_proto.Messages()
	n := 0
	for i := 0; i < msgs.Len(); i++ {
		fs := msgs.Get(i).Fields()
		for j := 0; j < fs.Len(); j++ {
			fd := fs.Get(j)
			n++
			named := strings.HasSuffix(string(fd.Name()), "auth_data")
			if secret.Field(fd) != named {
				t.Errorf("%s: Field = %v", fd.FullName(), secret.Field(fd))
			}
			if named && !secret.Name(string(fd.Name())) {
				t.Errorf("%s: Name(%q) = false", fd.FullName(), fd.Name())
			}
		}
	}
	if n < 300 {
		t.Errorf("only %d fields in the schema", n)
	}
	for _, name := range []string{"auth_method_name", "original_principal", "original_auth_method", "topic", "properties"} {
		if secret.Name(name) {
			t.Errorf("Name(%q) = true", name)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"auth_data": true, "original_auth_data": true, "proxy_auth_data": true, "AUTH_DATA": true,
		"password": true, "tls_password": true, "client_secret": true, "credentials": true, "refresh_token": true,
		"auth_method_name": false, "auth_data_size": false, "data": false, "authoritative": false,
		"original_auth_method": false, "tokens_per_second": false, "": false,
	} {
		if got := secret.IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"

func TestScrub(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                        "plain text",
		jwt:                                 "<redacted 41 bytes>",
		"token " + jwt + " expired":         "token <redacted 41 bytes> expired",
		"alg none " + jwt[:37]:              "alg none <redacted 37 bytes>",
		"Bearer abc.def-ghi":                "Bearer <redacted 11 bytes>",
		"authorization: bearer   xyz, next": "authorization: bearer   <redacted 3 bytes>, next",
		"Bearer ":                           "Bearer ",
		"Bearer <redacted 3 bytes>":         "Bearer <redacted 3 bytes>",
		"eyJ only":                          "eyJ only",
		"eyJabc.def":                        "eyJabc.def", // two parts: not a JWT
		"xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", // inside a word
		"a " + jwt + " b " + jwt:                     "a <redacted 41 bytes> b <redacted 41 bytes>",
	} {
		if got := secret.Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
		if got := secret.HasCredential(in); got != (want != in) {
			t.Errorf("HasCredential(%q) = %v", in, got)
		}
		if got := secret.HasCredentialBytes([]byte(in)); got != (want != in) {
			t.Errorf("HasCredentialBytes(%q) = %v", in, got)
		}
	}
}

func TestRedact(t *testing.T) {
	cmd := &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECT.Enum(), Connect: &pulsarapi.CommandConnect{
		ClientVersion: proto.String("client " + jwt), AuthData: []byte("token:secret"), OriginalAuthData: proto.String("orig-secret")}}
	before := proto.Clone(cmd)
	out := secret.Redact(cmd)
	c := out.GetConnect()
	if string(c.GetAuthData()) != "<redacted 12 bytes>" || c.GetOriginalAuthData() != "<redacted 11 bytes>" || c.GetClientVersion() != "client <redacted 41 bytes>" {
		t.Errorf("redacted %v", out)
	}
	if !proto.Equal(cmd, before) {
		t.Error("Redact modified its input")
	}
	for _, m := range []*pulsarapi.BaseCommand{
		{Type: pulsarapi.BaseCommand_AUTH_RESPONSE.Enum(), AuthResponse: &pulsarapi.CommandAuthResponse{Response: &pulsarapi.AuthData{AuthData: []byte("abc")}}},
		{Type: pulsarapi.BaseCommand_AUTH_CHALLENGE.Enum(), AuthChallenge: &pulsarapi.CommandAuthChallenge{Challenge: &pulsarapi.AuthData{AuthData: []byte("abc")}}},
		{Type: pulsarapi.BaseCommand_LOOKUP.Enum(), LookupTopic: &pulsarapi.CommandLookupTopic{Topic: proto.String("t"), RequestId: proto.Uint64(1), OriginalAuthData: proto.String("abc")}},
		{Type: pulsarapi.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pulsarapi.CommandPartitionedTopicMetadata{Topic: proto.String("t"), RequestId: proto.Uint64(1), OriginalAuthData: proto.String("abc")}},
	} {
		b, _ := proto.Marshal(secret.Redact(m))
		if bytes.Contains(b, []byte("abc")) || !bytes.Contains(b, []byte("<redacted 3 bytes>")) {
			t.Errorf("%v: not redacted", m.GetType())
		}
	}
	flow := &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_FLOW.Enum(), Flow: &pulsarapi.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1)}}
	if secret.Redact(flow) != flow || secret.Redact[*pulsarapi.BaseCommand](nil) != nil || secret.Needs(flow) {
		t.Error("a command without secrets is copied")
	}
	md := &pulsarapi.MessageMetadata{ProducerName: proto.String("p"), Properties: []*pulsarapi.KeyValue{{Key: proto.String("k"), Value: proto.String("Bearer tok")}}}
	if got := secret.Redact(md).GetProperties()[0].GetValue(); got != "Bearer <redacted 3 bytes>" {
		t.Errorf("property %q", got)
	}
}

// TestRanges: the wire walk finds exactly the bytes Redact replaces, also
// in a message that does not unmarshal (a string that is not UTF-8 before
// the secret), in an unknown field, and after the encoding breaks off.
func TestRanges(t *testing.T) {
	md := (&pulsarapi.CommandConnect{}).ProtoReflect().Descriptor()
	enc := func(m proto.Message) []byte { b, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(m); return b }
	ok := enc(&pulsarapi.CommandConnect{ClientVersion: proto.String("v"), AuthData: []byte("SECRET-A"), OriginalAuthData: proto.String("SECRET-B")})
	bad := append([]byte{0x0a, 0x02, 0xff, 0xfe}, enc(&pulsarapi.CommandConnect{AuthData: []byte("SECRET-A")})...) // client_version not UTF-8
	unknown := append(append([]byte{}, ok...), 0xaa, 0x06, byte(len(jwt)))                                         // field 100, bytes
	unknown = append(unknown, jwt...)
	broken := append(append([]byte{}, ok...), 0x0a, 0x7f) // a length past the end
	broken = append(broken, "x "+jwt...)
	for name, c := range map[string]struct {
		b    []byte
		want []string
	}{
		"ok":      {ok, []string{"SECRET-A", "SECRET-B"}},
		"bad":     {bad, []string{"SECRET-A"}},
		"unknown": {unknown, []string{"SECRET-A", "SECRET-B", jwt}},
		"broken":  {broken, []string{"SECRET-A", "SECRET-B", jwt}},
	} {
		var got []string
		for _, r := range secret.Ranges(nil, c.b, 100, md) {
			got = append(got, string(c.b[r[0]-100:r[1]-100]))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: ranges hold %q, want %q", name, got, c.want)
		}
	}
	if rs := secret.Ranges(nil, []byte{0xff, 0xff, 0xff}, 0, md); len(rs) != 0 {
		t.Errorf("garbage: %v", rs)
	}
}

// FuzzRanges: the wire walk never panics, and its ranges lie within the
// message, in order and apart.
func FuzzRanges(f *testing.F) {
	f.Add([]byte{0x1a, 0x03, 'a', 'b', 'c'})
	f.Add([]byte("\x0a\x01x" + jwt))
	f.Fuzz(func(t *testing.T, b []byte) {
		md := (&pulsarapi.BaseCommand{}).ProtoReflect().Descriptor()
		last := 0
		for _, r := range secret.Ranges(nil, b, 0, md) {
			if r[0] < last || r[1] <= r[0] || r[1] > len(b) {
				t.Fatalf("range %v after %d in %d bytes", r, last, len(b))
			}
			last = r[1]
		}
	})
}

var _ protoreflect.FieldDescriptor // the package's API is in protoreflect terms

// Example shows what every output does with a CONNECT that a proxy sends
// for its client: the proxy's and the client's credentials are replaced,
// and a token in an ordinary string too.
func Example() {
	cmd := &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECT.Enum(), Connect: &pulsarapi.CommandConnect{
		ClientVersion:     proto.String("proxy"),
		AuthMethodName:    proto.String("token"),
		AuthData:          []byte("proxy-token"),
		OriginalAuthData:  proto.String("client-token"),
		OriginalPrincipal: proto.String("alice"),
	}}
	c := secret.Redact(cmd).GetConnect()
	fmt.Println(string(c.GetAuthData()))
	fmt.Println(c.GetOriginalAuthData())
	fmt.Println(c.GetOriginalPrincipal())
	fmt.Println(secret.Scrub("Authorization: Bearer abc123"))
	// Output:
	// <redacted 11 bytes>
	// <redacted 12 bytes>
	// alice
	// Authorization: Bearer <redacted 6 bytes>
}
