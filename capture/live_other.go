//go:build !linux && !pcap

package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// LiveBackend names the backend of this build ("" : none).
const LiveBackend = ""

// Live is not available on this system without libpcap (-tags pcap).
type Live struct{}

// OpenLive fails with ErrLiveUnsupported.
func OpenLive(opts LiveOptions) (*Live, error) {
	return nil, &Error{File: opts.Interface, Err: ErrLiveUnsupported}
}

// LiveInterfaces fails with ErrLiveUnsupported.
func LiveInterfaces() ([]Interface, error) { return nil, ErrLiveUnsupported }

func (l *Live) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	return nil, gopacket.CaptureInfo{}, 0, ErrLiveUnsupported
}
func (l *Live) Close() error              { return nil }
func (l *Live) Stop()                     {}
func (l *Live) Stats() (LiveStats, error) { return LiveStats{}, ErrLiveUnsupported }
func (l *Live) LinkType() layers.LinkType { return 0 }
func (l *Live) Name() string              { return "" }
