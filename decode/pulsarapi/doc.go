// Package pulsarapi holds the Go types generated from pulsarscope's own schema
// of the Apache Pulsar binary protocol (pulsar_api.proto in this folder).
//
// The generated file is committed; regenerate it with
//
//	go generate ./decode/pulsarapi
package pulsarapi

//go:generate go -C ../../tools/protogen tool buf generate ../../decode/pulsarapi --template buf.gen.yaml
