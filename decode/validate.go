package decode

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// checker walks decoded messages for unknown fields and unset proto2
// required fields, naming each by its field path. It keeps its buffers
// between walks; paths are only built when something is found.
type checker struct {
	required map[protoreflect.FullName][]protoreflect.FieldDescriptor
	stack    []pathSeg
	unknown  []string
	missing  []string
	nums     []protowire.Number
	// skipRootType hides the root's type field (1) from both lists, and
	// the sub-command field numbered as the type (rootSub) from the
	// unknown ones: an unknown command type is reported as such, not
	// twice more.
	skipRootType bool
	rootSub      protowire.Number
}

type pathSeg struct {
	name protoreflect.Name
	idx  int // list index, -1 when not a list element
}

func (c *checker) reset() {
	c.stack = c.stack[:0]
	c.unknown = c.unknown[:0]
	c.missing = c.missing[:0]
	c.skipRootType, c.rootSub = false, 0
}

// walk checks m, whose path is root (e.g. "metadata"; "" for the command).
func (c *checker) walk(m protoreflect.Message, root string) {
	c.stack = c.stack[:0]
	c.visit(m, root)
}

func (c *checker) requiredOf(d protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if c.required == nil {
		c.required = make(map[protoreflect.FullName][]protoreflect.FieldDescriptor)
	}
	if r, ok := c.required[d.FullName()]; ok {
		return r
	}
	var r []protoreflect.FieldDescriptor
	fs := d.Fields()
	for i := 0; i < fs.Len(); i++ {
		if fd := fs.Get(i); fd.Cardinality() == protoreflect.Required {
			r = append(r, fd)
		}
	}
	c.required[d.FullName()] = r
	return r
}

func (c *checker) visit(m protoreflect.Message, root string) {
	atRoot := len(c.stack) == 0
	if u := m.GetUnknown(); len(u) > 0 {
		c.nums = unknownNumbers(c.nums[:0], u)
		var sb strings.Builder
		for _, n := range c.nums {
			if atRoot && c.skipRootType && (n == 1 || n == c.rootSub) {
				continue
			}
			if sb.Len() > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(int(n)))
		}
		if sb.Len() > 0 {
			c.unknown = append(c.unknown, c.path(root, "")+"{"+sb.String()+"}")
		}
	}
	for _, fd := range c.requiredOf(m.Descriptor()) {
		if atRoot && c.skipRootType && fd.Number() == 1 {
			continue
		}
		if !m.Has(fd) {
			c.missing = append(c.missing, c.path(root, fd.Name()))
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				c.stack = append(c.stack, pathSeg{fd.Name(), i})
				c.visit(l.Get(i).Message(), root)
				c.stack = c.stack[:len(c.stack)-1]
			}
			return true
		}
		c.stack = append(c.stack, pathSeg{fd.Name(), -1})
		c.visit(v.Message(), root)
		c.stack = c.stack[:len(c.stack)-1]
		return true
	})
}

// path renders root, the current stack and an optional leaf, dot separated.
func (c *checker) path(root string, leaf protoreflect.Name) string {
	var sb strings.Builder
	sb.WriteString(root)
	add := func(s string) {
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(s)
	}
	for _, s := range c.stack {
		add(string(s.name))
		if s.idx >= 0 {
			sb.WriteString("[" + strconv.Itoa(s.idx) + "]")
		}
	}
	if leaf != "" {
		add(string(leaf))
	}
	if sb.Len() == 0 {
		return "(command)"
	}
	return sb.String()
}

// flush turns what the walks found into at most one problem per code.
func (c *checker) flush(f *Frame) {
	if len(c.missing) > 0 {
		f.addProblem(CodeMissingRequiredField, "%s not set", strings.Join(c.missing, ", "))
	}
	if len(c.unknown) > 0 {
		f.addProblem(CodeUnknownFields, "fields not in the schema: %s", strings.Join(c.unknown, " "))
	}
	c.missing = c.missing[:0]
	c.unknown = c.unknown[:0]
}
