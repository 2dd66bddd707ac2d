package main

const rssUnit = 1
