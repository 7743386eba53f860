package turn

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/turnstream/turnstream/pkg/wire"
)

// SchemaOptions configure a SchemaCache.
type SchemaOptions struct {
	// Limits bound each schema and each check against it. Zero fields
	// take DefaultSchemaLimits.
	Limits SchemaLimits
	// MaxEntries caps the distinct schemas kept (least recently used go
	// first); a schema that was refused counts as one, so refusing it again
	// is free too. Default 1,024.
	MaxEntries int
	// MaxBytes caps the canonical JSON bytes of the schemas kept, summed.
	// A compiled schema holds some 40 to 90 times its canonical size, so
	// the default 512 KiB keeps the cache under about 45 MiB however
	// costly the schemas requests bring. Default 524,288.
	MaxBytes int
}

// Defaults a zero SchemaOptions takes.
const (
	DefaultSchemaCacheEntries = 1024
	DefaultSchemaCacheBytes   = 512 << 10
)

// Validate reports an invalid option.
func (o SchemaOptions) Validate() error {
	var errs []error
	if err := o.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.MaxEntries < 0 {
		errs = append(errs, fmt.Errorf("turn: schema cache max entries is negative (%d)", o.MaxEntries))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("turn: schema cache max bytes is negative (%d)", o.MaxBytes))
	}
	return errors.Join(errs...)
}

// SchemaCache compiles tool schemas once per worker: by content (the
// SHA-256 of the parameters' canonical JSON), whatever the tool's name,
// the request's encoding or the delivery. It holds at most MaxEntries
// schemas, dropping the least recently used. It is safe for concurrent
// use; concurrent requests for one schema wait for a single compilation.
// It also holds at most MaxBytes of canonical schemas, so that unique
// costly schemas cannot fill memory.
type SchemaCache struct {
	limits   SchemaLimits
	max      int
	maxBytes int
	bytes    int // canonical bytes of the entries held

	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *cacheEntry
	lru     *list.List                 // front: most recently used

	compiles atomic.Uint64
}

type cacheEntry struct {
	key     [32]byte
	weight  int // canonical bytes
	once    sync.Once
	schema  *ToolSchema
	problem *schemaProblem
}

// NewSchemaCache returns an empty cache with o's limits.
func NewSchemaCache(o SchemaOptions) (*SchemaCache, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultSchemaCacheEntries
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultSchemaCacheBytes
	}
	return &SchemaCache{
		limits:   o.Limits.withDefaults(),
		max:      o.MaxEntries,
		maxBytes: o.MaxBytes,
		entries:  map[[32]byte]*list.Element{},
		lru:      list.New(),
	}, nil
}

// Compile compiles each tool's parameter schema, or finds it compiled. A
// schema that cannot be used is a *SchemaError, as from CompileTools.
func (c *SchemaCache) Compile(tools []wire.Tool) (ToolSchemas, error) {
	return compileTools(tools, c.limits, c.get)
}

// Compiles counts the compilations the cache ran (its misses).
func (c *SchemaCache) Compiles() uint64 { return c.compiles.Load() }

// Len is the number of schemas held.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *SchemaCache) get(key [32]byte, canon []byte) (*ToolSchema, *schemaProblem) {
	c.mu.Lock()
	var e *cacheEntry
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e = el.Value.(*cacheEntry)
	} else {
		e = &cacheEntry{key: key, weight: len(canon)}
		c.entries[key] = c.lru.PushFront(e)
		c.bytes += e.weight
		// The newest entry stays, even alone over the byte cap.
		for c.lru.Len() > 1 && (c.lru.Len() > c.max || c.bytes > c.maxBytes) {
			old := c.lru.Back()
			c.lru.Remove(old)
			oe := old.Value.(*cacheEntry)
			delete(c.entries, oe.key)
			c.bytes -= oe.weight
		}
	}
	c.mu.Unlock()
	// Outside the lock: compiling one schema does not hold up the others.
	e.once.Do(func() {
		c.compiles.Add(1)
		e.schema, e.problem = compileCanonical(canon, c.limits)
	})
	return e.schema, e.problem
}

// contentKey identifies a schema by its canonical encoding.
func contentKey(canon []byte) [32]byte { return sha256.Sum256(canon) }
