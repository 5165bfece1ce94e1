//go:build !linux

package fdbmodel

import "time"

// preciseNanosleep: elsewhere Sleep relies on time.Sleep, whose precision
// is the platform's.
const preciseNanosleep = false

func nanosleep(d time.Duration) { time.Sleep(d) }
