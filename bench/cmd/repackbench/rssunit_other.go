//go:build unix && !darwin

package main

const rssUnit = 1024
