// Package protogen pins the code generators of pulsarscope's protobuf schema
// (buf and protoc-gen-go, as go.mod tool dependencies). It has no code of its
// own: run `go generate ./decode/pulsarapi` from the repository root.
package protogen
